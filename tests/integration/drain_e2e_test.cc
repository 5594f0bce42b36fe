// The drain's limits end to end: a real agent process and a real kspool-devkafka cluster.
// More busy topics than the window holds messages all deliver; a Kafka option that
// would break the drain's contract stops the agent at start.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/child_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using namespace std::chrono_literals;
using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

TEST(DrainE2E, MoreBusyTopicsThanTheWindowHoldsAllDeliver) {
  constexpr int kTopics = 150, kRounds = 5, kPerRound = 4;
  kspool::testing::TempDir dir;
  // The topics are made when first asked for (the mock cluster's auto-creation): made
  // one by one at start, 150 take longer than kspool-devkafka may take to start.
  DevKafka kafka(dir.sub("kafka.log"), 1, {});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--max-inflight-messages", "100"});
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < kRounds; ++round) {
    kspool::v1::SendRequest req;
    for (int t = 0; t < kTopics; ++t) {
      for (int i = 0; i < kPerRound; ++i) {
        auto* m = req.add_messages();
        m->set_topic("busy-" + std::to_string(t));
        m->set_value("m-" + std::to_string(round) + "-" + std::to_string(i));
      }
    }
    kspool::v1::SendResponse resp;
    grpc::Status s = agent.Send(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  ASSERT_TRUE(agent.WaitUntilDrained(30s)) << "entries left: " << agent.WalStats().entries();
  EXPECT_EQ(agent.WalStats().delivered(), uint64_t{kTopics * kRounds * kPerRound});
  RecordProperty("seconds", std::to_string(std::chrono::duration<double>(
                                                std::chrono::steady_clock::now() - start)
                                                .count()));
}

TEST(DrainE2E, KafkaOptionThatBreaksTheDrainStopsTheAgentWithExitTwoNamingIt) {
  kspool::testing::TempDir dir;
  kspool::testing::ChildProcess agent(
      {KSPOOL_AGENT_BIN, "--wal-dir", dir.sub("wal"), "--listen", "127.0.0.1:0",
       "--metrics-listen", "127.0.0.1:0", "--kafka-option", "delivery.report.only.error=true"},
      dir.sub("agent.err"));
  std::optional<int> st = agent.Wait(10s);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 2) << *st;
  std::ifstream in(dir.sub("agent.err"));
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("delivery.report.only.error"), std::string::npos) << err;
}

}  // namespace
}  // namespace kspool
