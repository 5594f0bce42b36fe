// Dead letters with kspoolctl, end to end: an agent discards messages Kafka rejects as too
// large; while it runs, replay and purge refuse (exit 4) and change nothing; once it is
// stopped, one is replayed under a new sequence number and one purged, the ledger still
// holds, and the next agent delivers the replayed message to Kafka.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CtlResult;
using kspool::testing::DevKafka;
using kspool::testing::RunCtl;
using kspool::testing::JsonLines;
using nlohmann::json;
using namespace std::chrono_literals;

int InfoLogFiles(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    n += e.path().filename().string().rfind("LOG", 0) == 0;
  }
  return n;
}

class DeadLetterTest : public ::testing::Test {
 protected:
  CtlResult Ctl(const std::vector<std::string>& args) { return RunCtl(args, tmp_.path()); }
  uint64_t Send(AgentProcess& agent, const std::string& key, const std::string& value) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic("big");
    m->set_key(key);
    m->set_value(value);
    kspool::v1::SendResponse resp;
    grpc::Status s = agent.Send(req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return s.ok() ? resp.sequence(0) : 0;
  }

  kspool::testing::TempDir tmp_;
  const std::string wal_ = tmp_.sub("wal");
};

TEST_F(DeadLetterTest, ReplayedDeadLetterIsDeliveredAndPurgedOneIsGone) {
  DevKafka kafka(tmp_.path(), 1, {"big:1"});
  const std::string big_a(5000, 'a'), big_b(5000, 'b');
  uint64_t seq_a, seq_b;
  {
    AgentProcess agent(wal_, tmp_.sub("agent1.log"), kafka.bootstrap(),
                       {"--kafka-option", "message.max.bytes=2000"});
    ASSERT_NE(Send(agent, "small", "fits"), 0u);
    seq_a = Send(agent, "ka", big_a);
    seq_b = Send(agent, "kb", big_b);
    ASSERT_TRUE(agent.WaitUntilDrained(30s)) << "both large messages are discarded";

    // Read-only inspection works beside the running agent.
    CtlResult list = Ctl({"--json", "dead", "list", wal_});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    std::vector<json> dead = JsonLines(list.out);
    ASSERT_EQ(dead.size(), 2u);
    EXPECT_EQ(dead[0]["seq"], seq_a);
    EXPECT_EQ(dead[0]["reason"], "msg_size_too_large");
    EXPECT_EQ(dead[0]["key"], "ka");
    EXPECT_EQ(dead[0]["value_size"], 5000);
    CtlResult text = Ctl({"dead", "list", wal_});
    EXPECT_EQ(text.exit_code, 0) << text.err;
    kspool::testing::ExpectGolden("dead_list", kspool::testing::Normalize(text.out, {}));
    CtlResult show = Ctl({"--json", "dead", "show", wal_, std::to_string(seq_b)});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_EQ(json::parse(show.out)["value"], big_b);

    // Writing while the agent holds the WAL: refused, naming the reason, nothing touched.
    const int logs = InfoLogFiles(wal_);
    for (std::vector<std::string> args :
         {std::vector<std::string>{"dead", "replay", wal_, "--seq", std::to_string(seq_a)},
          {"dead", "purge", wal_, "--all", "--yes"}}) {
      CtlResult r = Ctl(args);
      EXPECT_EQ(r.exit_code, 4) << args[1] << ": " << r.err;
      EXPECT_NE(r.err.find("is in use by a running agent (process " +
                           std::to_string(agent.process().pid()) + " holds its lock); stop the agent first"),
                std::string::npos) << r.err;
    }
    EXPECT_EQ(InfoLogFiles(wal_), logs) << "the agent's RocksDB info log was not rotated";
    EXPECT_EQ(JsonLines(Ctl({"--json", "dead", "list", wal_}).out).size(), 2u);
    agent.process().Signal(SIGTERM);
    ASSERT_TRUE(agent.process().Wait(30s).has_value());
  }

  CtlResult unconfirmed = Ctl({"dead", "purge", wal_, "--seq", std::to_string(seq_b)});
  EXPECT_EQ(unconfirmed.exit_code, 2);
  EXPECT_NE(unconfirmed.err.find("add --yes"), std::string::npos) << unconfirmed.err;
  EXPECT_EQ(JsonLines(Ctl({"--json", "dead", "list", wal_}).out).size(), 2u);

  CtlResult replay = Ctl({"--json", "dead", "replay", wal_, "--seq", std::to_string(seq_a)});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  json replayed = json::parse(replay.out);
  ASSERT_EQ(replayed["count"], 1);
  EXPECT_EQ(replayed["replayed"][0]["dead_seq"], seq_a);
  const uint64_t new_seq = replayed["replayed"][0]["seq"];
  EXPECT_EQ(new_seq, seq_b + 1) << "a new sequence number, after every earlier one";

  CtlResult purge = Ctl({"--json", "dead", "purge", wal_, "--reason", "msg_size_too_large", "--yes"});
  ASSERT_EQ(purge.exit_code, 0) << purge.err;
  EXPECT_EQ(json::parse(purge.out)["purged"], json::array({seq_b}));
  CtlResult none = Ctl({"dead", "list", wal_});
  EXPECT_EQ(none.out.find('\n'), none.out.size() - 1) << "only the header: " << none.out;

  std::vector<json> log = JsonLines(Ctl({"--json", "wal", "dump", wal_}).out);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0]["seq"], new_seq);
  EXPECT_EQ(log[0]["key"], "ka");
  EXPECT_EQ(log[0]["value"], big_a);
  json stats = json::parse(Ctl({"--json", "wal", "stats", wal_}).out);
  json big = stats["topics"]["big"];
  EXPECT_EQ(big["accepted"]["count"], 4) << "three sent, one accepted again";
  EXPECT_EQ(big["delivered"]["count"], 1);
  EXPECT_EQ(big["discarded"]["msg_size_too_large"]["count"], 2) << "discards stay counted";
  EXPECT_EQ(big["pending"]["count"], 1);
  EXPECT_EQ(stats["dead_letters"]["count"], 0);
  CtlResult verify = Ctl({"wal", "verify", wal_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out;

  AgentProcess agent(wal_, tmp_.sub("agent2.log"), kafka.bootstrap());
  ASSERT_TRUE(agent.WaitUntilDrained(30s));
  bool delivered = false;
  for (const auto& r : kspool::testing::ReadTopic(kafka.bootstrap(), "big", 2, 30s)) {
    if (r.value == big_a) {
      delivered = true;
      EXPECT_EQ(r.key, "ka");
      EXPECT_EQ(r.seq, new_seq);
    }
    EXPECT_NE(r.value, big_b);
  }
  EXPECT_TRUE(delivered) << "the replayed message reached Kafka";

  CtlResult report = Ctl({"--json", "report", "--agent", agent.address()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  json ledger = json::parse(report.out)["topics"]["big"]["ledger"];
  EXPECT_EQ(ledger["accepted"], 4);
  EXPECT_EQ(ledger["delivered"], 2);
  EXPECT_EQ(ledger["discarded"], 2);
  EXPECT_EQ(ledger["pending"], 0);
  EXPECT_EQ(ledger["holds"], true);
  CtlResult text = Ctl({"report", "--agent", agent.address()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("msg_size_too_large"), std::string::npos) << text.out;
  CtlResult status = Ctl({"--json", "status", "--agent", agent.address()});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(json::parse(status.out)["entries"], 0);
  CtlResult cp = Ctl({"--json", "commit-point", "--agent", agent.address()});
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  EXPECT_GT(json::parse(cp.out)["topics"]["big"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace kspool
