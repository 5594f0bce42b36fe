// Heartbeats carry the commit point into every partition; Broadcast reaches every
// partition of its topics. Both checked with a real consumer.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "tests/support/spool_harness.h"

namespace kspool {
namespace {

using kspool::testing::ConsumedRecord;
using kspool::testing::SpoolHarness;
using namespace std::chrono_literals;

bool IsHeartbeat(const ConsumedRecord& r) {
  for (const auto& [k, v] : r.headers) {
    if (k == "kspool.heartbeat") return true;
  }
  return false;
}

TEST(Heartbeat, EveryMessageAtOrBeforeTheCommitPointComesBeforeTheHeartbeat) {
  SpoolHarness h({"hb:3"});
  h.Start([](agent::Config* c) {
    c->heartbeat.interval_ms = 100;
    c->heartbeat.topics = {"hb"};
  });
  std::mt19937 rng(7);
  for (int i = 0; i < 150; ++i) {
    ASSERT_TRUE(h.Send("hb", {"m" + std::to_string(i)}, "k" + std::to_string(rng() % 10)).status.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 15));
  }
  std::this_thread::sleep_for(500ms);  // a few heartbeats after the last message
  h.agent().heartbeater()->Stop();
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto records = kspool::testing::ReadTopic(h.kafka().bootstrap(), "hb", 150, 30s);

  std::map<int32_t, std::vector<const ConsumedRecord*>> by_partition;
  for (const auto& r : records) by_partition[r.partition].push_back(&r);
  ASSERT_EQ(by_partition.size(), 3u) << "heartbeats reach every partition";
  size_t heartbeats = 0, checked = 0;
  for (auto& [p, recs] : by_partition) {
    std::sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    std::map<uint64_t, int64_t> first_offset;  // seq -> first offset (duplicates later)
    for (const auto* r : recs) first_offset.try_emplace(r->seq, r->offset);
    for (const auto* hb : recs) {
      if (!IsHeartbeat(*hb)) continue;
      ++heartbeats;
      auto v = nlohmann::json::parse(hb->value);
      EXPECT_EQ(v["type"], "kspool.heartbeat");
      EXPECT_EQ(v["partition"], p);
      EXPECT_EQ(v["agent_id"], h.agent().agent_id());
      const int64_t t = v["topic_commit_point_ms"];
      EXPECT_LE(v["commit_point_ms"].get<int64_t>(), t);
      EXPECT_LE(t, v["created_ms"].get<int64_t>());
      for (const auto* r : recs) {
        // The record timestamp is the agent's receive time (no client timestamp sent).
        if (IsHeartbeat(*r) || r->timestamp_ms > t) continue;
        ++checked;
        EXPECT_LT(first_offset[r->seq], hb->offset)
            << "partition " << p << ": message seq " << r->seq << " received at "
            << r->timestamp_ms << " <= heartbeat commit point " << t << " comes after it";
      }
    }
  }
  std::printf("heartbeats=%zu ordering checks=%zu\n", heartbeats, checked);
  EXPECT_GT(heartbeats, 9u);
  EXPECT_GT(checked, 150u) << "the check must not be vacuous";
  h.ExpectAllAccountedFor("hb");
}

// Without --heartbeat-topics, heartbeats go to the topics the WAL tracks: one it forgot
// (here beyond --max-tracked-topics) gets none and so stays forgotten.
TEST(Heartbeat, WithoutAListOnlyTrackedTopicsGetHeartbeats) {
  SpoolHarness h({"kept:2", "gone:3"});
  h.Start([](agent::Config* c) {
    c->wal.topic_idle_forget_ms = 0;
    c->wal.max_tracked_topics = 1;
  });
  ASSERT_TRUE(h.Send("gone", {"x"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  ASSERT_TRUE(h.Send("kept", {"y"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  ASSERT_TRUE(h.agent().wal()->ForgetIdleTopics().ok());  // the maintenance thread's job
  ASSERT_EQ(h.agent().wal()->TrackedTopics(), std::vector<std::string>{"kept"});
  EXPECT_EQ(h.agent().heartbeater()->Beat(), 2u) << "kept's 2 partitions, none of gone's 3";
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  EXPECT_EQ(h.agent().wal()->TrackedTopics(), std::vector<std::string>{"kept"});
}

TEST(Broadcast, OneMessageReachesEveryPartitionOfEachTopic) {
  SpoolHarness h({"a:3", "b:2", "c:1"});
  h.Start();
  kspool::v1::BroadcastRequest req;
  req.mutable_message()->set_value("to-all");
  req.mutable_message()->add_headers()->set_key("kind");
  req.add_topics("a");
  req.add_topics("b");
  grpc::ClientContext ctx;
  kspool::v1::BroadcastResponse resp;
  grpc::Status s = h.spool().Broadcast(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.targets_size(), 5);
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  for (const auto& [topic, partitions] : std::vector<std::pair<std::string, int>>{{"a", 3}, {"b", 2}}) {
    auto records = kspool::testing::ReadTopic(h.kafka().bootstrap(), topic, partitions, 20s);
    std::set<int32_t> seen;
    for (const auto& r : records) {
      EXPECT_EQ(r.value, "to-all");
      seen.insert(r.partition);
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(partitions)) << topic;
  }
  EXPECT_TRUE(kspool::testing::ReadTopic(h.kafka().bootstrap(), "c", 0, 3s).empty());

  // Without a list: every topic the agent has seen (a and b so far).
  grpc::ClientContext ctx2;
  kspool::v1::BroadcastRequest all;
  all.mutable_message()->set_value("everyone");
  kspool::v1::BroadcastResponse resp2;
  ASSERT_TRUE(h.spool().Broadcast(&ctx2, all, &resp2).ok());
  EXPECT_EQ(resp2.targets_size(), 5);

  grpc::ClientContext ctx3;
  kspool::v1::BroadcastRequest bad;
  bad.add_topics("no good");
  kspool::v1::BroadcastResponse resp3;
  grpc::Status invalid = h.spool().Broadcast(&ctx3, bad, &resp3);
  EXPECT_EQ(invalid.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(invalid.error_message().find("topics[0]"), std::string::npos) << invalid.error_message();
  ASSERT_TRUE(h.WaitUntilDrained(30s));
}

}  // namespace
}  // namespace kspool
