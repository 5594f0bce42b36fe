// `kspoolctl send --bruce-socket PATH` / `--bruce-tcp HOST:PORT` against a real agent with
// its Bruce/Dory input and kspool-devkafka: the messages reach Kafka with their key and,
// for --partition-key, in partition (uint32)key mod N; `report` lists what was refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CtlResult;
using kspool::testing::DevKafka;
using namespace std::chrono_literals;

class CtlBruceSend : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(tmp_.path(), 1, std::vector<std::string>{"b:3"});
    agent_ = std::make_unique<AgentProcess>(
        tmp_.sub("wal"), tmp_.sub("agent.log"), kafka_->bootstrap(),
        std::vector<std::string>{"--bruce-datagram-socket", tmp_.sub("d.sock"),
                                 "--bruce-stream-socket", tmp_.sub("s.sock"), "--bruce-tcp",
                                 "127.0.0.1:0"});
    const std::string& line = agent_->ready_line();
    const size_t at = line.find("bruce_tcp=") + 10;
    tcp_ = line.substr(at, line.find(' ', at) - at);
  }
  CtlResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--agent", agent_->address()});
    return kspool::testing::RunCtl(args, tmp_.path());
  }

  kspool::testing::TempDir tmp_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
  std::string tcp_;
};

TEST_F(CtlBruceSend, MessagesOnEachTransportReachKafkaWithKeyAndPartitionKey) {
  CtlResult d =
      Ctl({"send", "--bruce-socket", tmp_.sub("d.sock"), "--topic", "b", "--key", "k", "dgram"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("(datagram)"), std::string::npos) << d.out;
  CtlResult s = Ctl({"send", "--bruce-socket", tmp_.sub("s.sock"), "--topic", "b",
                     "--partition-key", "-1", "stream"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("(stream)"), std::string::npos) << s.out;
  CtlResult t = Ctl({"send", "--bruce-tcp", tcp_, "--topic", "b", "--partition-key", "7", "tcp"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  std::map<std::string, kspool::testing::ConsumedRecord> got;
  for (auto& r : kspool::testing::ReadTopic(kafka_->bootstrap(), "b", 3, 30s)) got[r.value] = r;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got["dgram"].key, "k");
  EXPECT_EQ(got["stream"].partition, static_cast<int32_t>(4294967295u % 3));
  EXPECT_EQ(got["tcp"].partition, 7 % 3);
}

TEST_F(CtlBruceSend, HeadersAndAnExplicitPartitionAreUsageErrors) {
  EXPECT_EQ(
      Ctl({"send", "--bruce-socket", tmp_.sub("d.sock"), "--topic", "b", "--header", "a=b", "x"})
          .exit_code,
      2);
  EXPECT_EQ(
      Ctl({"send", "--bruce-socket", tmp_.sub("d.sock"), "--topic", "b", "--partition", "1", "x"})
          .exit_code,
      2);
  EXPECT_EQ(Ctl({"send", "--topic", "b", "--partition-key", "1", "x"}).exit_code, 2);
}

TEST_F(CtlBruceSend, ReportListsWhatTheBruceInputRefused) {
  ASSERT_EQ(
      Ctl({"send", "--bruce-socket", tmp_.sub("d.sock"), "--topic", "no good", "x"}).exit_code, 0);
  nlohmann::json j;
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] {
        CtlResult r = Ctl({"--json", "report"});
        if (r.exit_code != 0) return false;
        j = nlohmann::json::parse(r.out);
        return j.contains("bruce_rejected") && j["bruce_rejected"]["counts"]["bad_topic"] == 1;
      },
      10s));
  ASSERT_EQ(j["bruce_rejected"]["recent"].size(), 1u);
  EXPECT_EQ(j["bruce_rejected"]["recent"][0]["transport"], "datagram");
}

}  // namespace
}  // namespace kspool
