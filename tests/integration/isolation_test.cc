// Partial faults on the Kafka side, end to end: a real agent process, a real
// kspool-devkafka cluster, a librdkafka consumer. One topic whose partitions have no
// leader, or one leaderless partition of six, must hold back only its own messages, and
// --max-message-age still applies to a partition that stays without a leader.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using namespace std::chrono_literals;
using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

// Sends `n` messages "<prefix><i>" to `topic` in batches; returns the first and the
// last receive time.
std::pair<int64_t, int64_t> SendMany(AgentProcess& agent, const std::string& topic, int n,
                                     const std::string& prefix, int batch = 1000) {
  int64_t first_ms = 0, receive_ms = 0;
  for (int i = 0; i < n; i += batch) {
    kspool::v1::SendRequest req;
    for (int k = i; k < std::min(n, i + batch); ++k) {
      auto* m = req.add_messages();
      m->set_topic(topic);
      m->set_value(prefix + std::to_string(k));
    }
    kspool::v1::SendResponse resp;
    grpc::Status s = agent.Send(req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    receive_ms = resp.receive_time_ms();
    if (first_ms == 0) first_ms = receive_ms;
  }
  return {first_ms, receive_ms};
}

size_t Distinct(const std::vector<kspool::testing::ConsumedRecord>& records) {
  std::set<std::string> values;
  for (const auto& r : records) values.insert(r.value);
  return values.size();
}

int64_t TopicPoint(const kspool::v1::GetCommitPointResponse& cp, const std::string& topic) {
  for (const auto& t : cp.topics()) {
    if (t.topic() == topic) return t.commit_point_ms();
  }
  return 0;
}

TEST(Isolation, TopicWithoutLeadersDoesNotStopAHealthyTopic) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.sub("kafka.log"), 1, {"stuck:6", "ok:3"});
  for (int p = 0; p < 6; ++p) {
    ASSERT_EQ(kafka.Command("leader stuck " + std::to_string(p) + " none"), "OK");
  }
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap());
  const auto start = std::chrono::steady_clock::now();
  const int64_t stuck_first_rt = SendMany(agent, "stuck", 120'000, "s-").first;
  const int64_t ok_rt = SendMany(agent, "ok", 30'000, "ok-").second;
  const auto sent = std::chrono::steady_clock::now();

  auto ok = kspool::testing::ReadTopic(kafka.bootstrap(), "ok", 30'000, 60s);
  EXPECT_EQ(Distinct(ok), 30'000u);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 60s);
  std::printf("healthy topic: %zu of 30000 consumed %.2f s after the last Send\n", Distinct(ok),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count());
  // The healthy topic's commit point passes its messages; the global one waits.
  int64_t ok_point = 0;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline && ok_point < ok_rt;) {
    ok_point = TopicPoint(agent.CommitPoint(), "ok");
    if (ok_point < ok_rt) std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(ok_point, ok_rt);
  EXPECT_LT(agent.CommitPoint().commit_point_ms(), stuck_first_rt);

  for (int p = 0; p < 6; ++p) {
    ASSERT_EQ(kafka.Command("leader stuck " + std::to_string(p) + " 1"), "OK");
  }
  ASSERT_TRUE(agent.WaitUntilDrained(120s));
  auto stuck = kspool::testing::ReadTopic(kafka.bootstrap(), "stuck", 120'000, 60s);
  EXPECT_EQ(Distinct(stuck), 120'000u);
  EXPECT_GE(agent.CommitPoint().commit_point_ms(), ok_rt);
  RecordProperty("seconds", std::to_string(std::chrono::duration<double>(
                                                std::chrono::steady_clock::now() - start)
                                                .count()));
}

TEST(Isolation, UnkeyedMessagesAvoidAPartitionThatLostItsLeader) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.sub("kafka.log"), 1, {"six:6"});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap());
  SendMany(agent, "six", 3000, "a-", 100);
  ASSERT_EQ(kafka.Command("leader six 2 none"), "OK");
  const auto lost = std::chrono::steady_clock::now();
  SendMany(agent, "six", 3000, "b-", 100);
  // Kafka acknowledged every message while the partition still has no leader: none
  // waited for it.
  EXPECT_TRUE(agent.WaitUntilDrained(30s));
  EXPECT_LT(std::chrono::steady_clock::now() - lost, 30s);
  // Records stored in partition 2 before the loss can be read once it has a leader again.
  ASSERT_EQ(kafka.Command("leader six 2 1"), "OK");
  auto records = kspool::testing::ReadTopic(kafka.bootstrap(), "six", 6000, 30s);
  EXPECT_EQ(Distinct(records), 6000u);
}

TEST(Isolation, LeaderlessPartitionPastTheAgeLimitIsDiscardedAndTheCommitPointMovesOn) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.sub("kafka.log"), 1, {"two:2"});
  // Partition 1 may hold 25 entries in the window; the rest of its entries stay unread.
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--max-message-age", "2s", "--max-inflight-messages", "100"});
  SendMany(agent, "two", 10, "warm-", 10);  // the agent learns the topic's layout
  ASSERT_TRUE(agent.WaitUntilDrained(10s));
  ASSERT_EQ(kafka.Command("leader two 1 none"), "OK");
  std::this_thread::sleep_for(1500ms);  // the agent's metadata (refreshed every second) knows
  kspool::v1::SendRequest req;
  for (int i = 0; i < 200; ++i) {
    auto* m = req.add_messages();
    m->set_topic("two");
    m->set_partition(1);
    m->set_value("lost-" + std::to_string(i));
  }
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent.Send(req, &resp).ok());
  const auto sent = std::chrono::steady_clock::now();
  const int64_t lost_rt = resp.receive_time_ms();
  // Older than 2 s, while the partition still has no leader: discarded, not waiting.
  ASSERT_TRUE(agent.WaitUntilDrained(6s));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::printf("200 entries of a leaderless partition discarded %.2f s after their Send\n",
              seconds);
  EXPECT_GE(seconds, 2.0);
  int64_t point = 0;
  for (auto deadline = std::chrono::steady_clock::now() + 2s;
       std::chrono::steady_clock::now() < deadline && point < lost_rt;) {
    point = agent.CommitPoint().commit_point_ms();
    if (point < lost_rt) std::this_thread::sleep_for(50ms);
  }
  EXPECT_GE(point, lost_rt) << "the global commit point waits for discarded entries";
  kspool::v1::GetDeliveryStatusRequest sreq;
  for (uint64_t seq : resp.sequence()) sreq.add_sequences(seq);
  kspool::v1::GetDeliveryStatusResponse sresp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  ASSERT_TRUE(agent.spool().GetDeliveryStatus(&ctx, sreq, &sresp).ok());
  ASSERT_EQ(sresp.statuses_size(), 200);
  for (const auto& st : sresp.statuses()) {
    EXPECT_EQ(st.state(), kspool::v1::DeliveryStatus::DISCARDED) << st.sequence();
    EXPECT_EQ(st.discard_reason(), "expired") << st.sequence();
  }
}

size_t CountLines(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

TEST(Isolation, FatalProducerErrorsReplaceTheProducerWithBackoffAndKeepEveryMessage) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.sub("kafka.log"), 1, {"t:2"});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap());
  SendMany(agent, "t", 10, "a-", 10);
  ASSERT_TRUE(agent.WaitUntilDrained(10s));
  // The idempotent producer cannot recover from a sequence desynchronization: fatal.
  ASSERT_EQ(kafka.Command("request error Produce 3 OUT_OF_ORDER_SEQUENCE_NUMBER"), "OK");
  SendMany(agent, "t", 300, "b-", 10);
  ASSERT_TRUE(agent.WaitUntilDrained(60s));
  auto records = kspool::testing::ReadTopic(kafka.bootstrap(), "t", 310, 30s);
  EXPECT_EQ(Distinct(records), 310u);
  const size_t replaced = CountLines(dir.sub("agent.log"), "replacing the producer after a fatal error");
  EXPECT_GE(replaced, 1u);
  EXPECT_LE(replaced, 3u);  // one per injected error at most: no tight loop
  EXPECT_GE(CountLines(dir.sub("agent.log"), "a new producer is in place"), 1u);
}

}  // namespace
}  // namespace kspool
