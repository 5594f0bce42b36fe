// kspoolctl's delivery confirmation against a real agent and kspool-devkafka:
// `send --wait kafka` prints where each message went (a consumer finds it there),
// `delivery` prints each sequence's state, `watch` follows the feed in order and stops
// cleanly, and a Send whose deadline passes first prints the sequences to ask later.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ChildProcess;
using kspool::testing::CtlResult;
using kspool::testing::DevKafka;
using kspool::testing::WaitUntil;
using nlohmann::json;
using namespace std::chrono_literals;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class CtlDeliveryTest : public ::testing::Test {
 protected:
  void StartAgent(const std::vector<std::string>& topics) {
    kafka_ = std::make_unique<DevKafka>(tmp_.path(), 1, topics);
    agent_ = std::make_unique<AgentProcess>(tmp_.sub("wal"), tmp_.sub("agent.log"), kafka_->bootstrap());
  }
  CtlResult Ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--agent", agent_->address()});
    return kspool::testing::RunCtl(args, tmp_.path());
  }
  // `kspoolctl watch ...` left running, its stderr in watch.err.
  std::unique_ptr<ChildProcess> StartWatch(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {KSPOOL_CTL_BIN, "--agent", agent_->address(), "watch"};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv, tmp_.sub("watch.err"));
  }
  std::string WatchErr() {
    std::ifstream in(tmp_.sub("watch.err"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  kspool::testing::TempDir tmp_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(CtlDeliveryTest, SendWaitKafkaPrintsOffsetsThatAConsumerReadsBack) {
  StartAgent({"ctl:3", "text:2"});
  const std::vector<std::string> values = {"one", "two", "three", "four"};
  std::vector<std::string> args = {"--json", "send", "--topic", "ctl", "--wait", "kafka"};
  args.insert(args.end(), values.begin(), values.end());
  CtlResult r = Ctl(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["deliveries"].size(), values.size()) << r.out;

  auto records = kspool::testing::ReadTopic(kafka_->bootstrap(), "ctl", values.size(), 30s);
  for (size_t i = 0; i < values.size(); ++i) {
    const json& d = j["deliveries"][i];
    SCOPED_TRACE(d.dump());
    EXPECT_EQ(d["sequence"], j["sequence"][i]);
    EXPECT_EQ(d["state"], "DELIVERED");
    EXPECT_EQ(d["topic"], "ctl");
    auto at = std::find_if(records.begin(), records.end(), [&](const auto& rec) {
      return rec.partition == d["partition"].get<int32_t>() && rec.offset == d["offset"].get<int64_t>();
    });
    ASSERT_NE(at, records.end()) << "no record at the printed partition and offset";
    EXPECT_EQ(at->value, values[i]);
    EXPECT_EQ(at->seq, d["sequence"].get<uint64_t>());
  }

  // The text form, on a topic of its own and an explicit partition, so that the offsets
  // are known: 0 and 1.
  r = Ctl({"send", "--topic", "text", "--partition", "1", "--wait", "kafka", "x", "y"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  kspool::testing::ExpectGolden("send_wait_kafka", kspool::testing::Normalize(r.out, {}));
}

TEST_F(CtlDeliveryTest, DeliveryPrintsEachSequencesStateAndUnknownForOnesNotAssigned) {
  StartAgent({"ctl:2"});
  CtlResult sent = Ctl({"--json", "send", "--topic", "ctl", "--wait", "kafka", "a", "b", "c"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  json s = json::parse(sent.out);
  const uint64_t first = s["sequence"][0], last = s["sequence"][2];
  const std::string not_yet = std::to_string(last + 1000);

  CtlResult r = Ctl({"--json", "delivery", std::to_string(first) + ".." + std::to_string(last), not_yet});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["statuses"].size(), 4u) << r.out;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(j["statuses"][i], s["deliveries"][i]) << "the same outcome as Send's";
  EXPECT_EQ(j["statuses"][3]["sequence"], last + 1000);
  EXPECT_EQ(j["statuses"][3]["state"], "UNKNOWN");

  r = Ctl({"delivery", std::to_string(first), not_yet});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[0].find("SEQ  STATE "), std::string::npos) << r.out;
  EXPECT_NE(lines[0].find("PARTITION  OFFSET"), std::string::npos) << r.out;
  std::istringstream row(lines[1]);
  std::string seq, state, topic, partition, offset;
  row >> seq >> state >> topic >> partition >> offset;
  EXPECT_EQ(seq, std::to_string(first));
  EXPECT_EQ(state, "DELIVERED");
  EXPECT_EQ(topic, "ctl");
  EXPECT_EQ(partition, std::to_string(s["deliveries"][0]["partition"].get<int>()));
  EXPECT_EQ(offset, std::to_string(s["deliveries"][0]["offset"].get<int64_t>()));
  std::istringstream unknown(lines[2]);
  unknown >> seq >> state;
  EXPECT_EQ(seq, not_yet);
  EXPECT_EQ(state, "UNKNOWN");
}

TEST_F(CtlDeliveryTest, WatchFromOnePrintsCountOutcomesInOrder) {
  StartAgent({"ctl:2"});
  json deliveries = json::array();
  for (const char* v : {"a", "b", "c"}) {
    CtlResult r = Ctl({"--json", "send", "--topic", "ctl", "--wait", "kafka", v, std::string(v) + "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json sent = json::parse(r.out);
    for (const json& d : sent["deliveries"]) deliveries.push_back(d);
  }
  CtlResult r = Ctl({"--json", "watch", "--from", "1", "--count", "6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.out;
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(json::parse(lines[i]), deliveries[i]);

  // Text: one line per outcome, from the second one on.
  const uint64_t second = deliveries[1]["sequence"];
  r = Ctl({"watch", "--from", std::to_string(second), "--count", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (int i = 0; i < 2; ++i) {
    const json& d = deliveries[1 + i];
    EXPECT_EQ(lines[i].rfind(std::to_string(d["sequence"].get<uint64_t>()) + " DELIVERED topic=ctl partition=" +
                                 std::to_string(d["partition"].get<int>()) +
                                 " offset=" + std::to_string(d["offset"].get<int64_t>()) + " time=",
                             0),
              0u)
        << lines[i];
  }
}

// A watch without --count follows live outcomes until SIGINT or SIGTERM, then exits 0
// and says where to resume.
TEST_F(CtlDeliveryTest, WatchStopsCleanlyOnSigintAndSigterm) {
  StartAgent({"ctl:1"});
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig);
    CtlResult sent = Ctl({"--json", "send", "--topic", "ctl", "--wait", "kafka", "v"});
    ASSERT_EQ(sent.exit_code, 0) << sent.err;
    const uint64_t seq = json::parse(sent.out)["sequence"][0];
    auto watch = StartWatch({"--from", std::to_string(seq)});
    auto line = watch->WaitForLine(std::to_string(seq) + " DELIVERED", 30s);
    ASSERT_TRUE(line) << WatchErr();
    watch->Signal(sig);
    std::optional<int> status = watch->Wait(10s);
    ASSERT_TRUE(status) << "did not stop";
    ASSERT_TRUE(WIFEXITED(*status)) << "died of a signal";
    EXPECT_EQ(WEXITSTATUS(*status), 0) << WatchErr();
    EXPECT_NE(WatchErr().find("stopped after 1 outcome(s); resume with: kspoolctl watch --from " +
                              std::to_string(seq + 1)),
              std::string::npos)
        << WatchErr();
  }
}

// An agent that keeps (almost) no outcomes: a watch from 1 ends with OUT_OF_RANGE, and
// kspoolctl says from where outcomes are still kept.
TEST_F(CtlDeliveryTest, WatchBelowWhatTheAgentKeepsSaysWhereToStart) {
  kafka_ = std::make_unique<DevKafka>(tmp_.path(), 1, std::vector<std::string>{"ctl:1"});
  agent_ = std::make_unique<AgentProcess>(tmp_.sub("wal"), tmp_.sub("agent.log"), kafka_->bootstrap(),
                                          std::vector<std::string>{"--delivery-retention-bytes", "1"});
  for (int i = 0; i < 10; ++i) {
    CtlResult r = Ctl({"send", "--topic", "ctl", "--wait", "kafka", "v" + std::to_string(i)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CtlResult r;
  ASSERT_TRUE(WaitUntil(
      [&] {
        r = Ctl({"watch", "--from", "1", "--count", "10"});
        return r.exit_code != 0;
      },
      20s, 100ms))
      << "the index kept everything: " << r.out;
  EXPECT_EQ(r.exit_code, 1);
  static const std::regex kBelow(R"(kspoolctl: outcomes below (\d+) are no longer kept .*; watch --from (\d+) or later\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, kBelow)) << r.err;
  EXPECT_GT(std::stoull(m[1]), 1u);
  EXPECT_EQ(m[1], m[2]);
  EXPECT_NE(r.err.find("OUT_OF_RANGE"), std::string::npos) << r.err;
}

// Kafka down: a WAIT_FOR_KAFKA Send cannot be confirmed before its deadline. kspoolctl
// exits 5 and prints the sequences (the agent's trailing metadata kspool-sequences);
// `delivery` shows them PENDING, and DELIVERED once Kafka is back.
TEST_F(CtlDeliveryTest, SendPastItsDeadlinePrintsTheSequencesToAskLater) {
  StartAgent({"ctl:1"});
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  CtlResult r = Ctl({"--json", "--timeout-ms", "1500", "send", "--topic", "ctl", "--wait", "kafka", "a", "b"});
  ASSERT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.err.find("DEADLINE_EXCEEDED"), std::string::npos) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["confirmed"], false);
  const std::string range = j["sequences"];
  ASSERT_NE(range.find(".."), std::string::npos) << range;

  r = Ctl({"--timeout-ms", "1500", "send", "--topic", "ctl", "--wait", "kafka", "c"});
  ASSERT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("outcome not known yet; ask with: kspoolctl delivery "), std::string::npos) << r.out;

  r = Ctl({"--json", "delivery", range});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json pending = json::parse(r.out)["statuses"];
  ASSERT_EQ(pending.size(), 2u) << r.out;
  for (const json& d : pending) EXPECT_EQ(d["state"], "PENDING") << d.dump();

  ASSERT_EQ(kafka_->Command("broker up all"), "OK");
  ASSERT_TRUE(WaitUntil(
      [&] {
        CtlResult now = Ctl({"--json", "delivery", range});
        if (now.exit_code != 0) return false;
        const json statuses = json::parse(now.out)["statuses"];
        for (const json& d : statuses) {
          if (d["state"] != "DELIVERED") return false;
        }
        return true;
      },
      30s, 200ms));
}

}  // namespace
}  // namespace kspool
