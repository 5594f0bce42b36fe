// The drain with entries handed to the producer and not answered yet: the window never
// lets an older entry of their lane go (read again, it would go out after them), and
// those the client holds for a partition without a leader, produced before the topic's
// partitions were known, are taken back once they are known; so are those it holds past
// the age limit for a partition the metadata says has a leader.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

using testing::FakeKafka;

using DrainInflight = testing::DrainFixture;

TEST_F(DrainInflight, WindowKeepsAFailedEntryWhileANewerOneOfItsKeyIsInTheClient) {
  kafka_.leaders["t"] = {true};
  kafka_.leaders["u"] = {false};  // u's entry waits in the window for a leader
  {
    DrainOptions o;
    o.max_inflight_messages = 2;  // with two topics at work, a share of one each
    o.retry_backoff_ms = 5000;
    o.retry_backoff_max_ms = 5000;
    o.random_seed = 1;
    StartDrain(o);
  }
  kafka_.fail_once[1] = FakeKafka::Transient("NOT_LEADER_OR_FOLLOWER");
  kafka_.hold.insert(2);  // its report comes late
  Append("t", 2, {"k"});        // seqs 1 and 2, one key
  Run(1);
  ASSERT_EQ(kafka_.produced.size(), 2u);
  Append("u", 1);  // a newcomer: t is over its share now
  Run(150);        // 1.5 s: the reader looked past the full window and found u
  // The late report: 2 failed too, behind 1 (as a partition's queue in the client).
  kafka_.fail_once[2] = FakeKafka::Transient("NOT_LEADER_OR_FOLLOWER");
  kafka_.hold.clear();
  Run(1000);  // 10 s: past both retries
  kafka_.leaders["u"] = {true};
  Run(300);
  std::vector<uint64_t> t = kafka_.DeliveredSeqs("t");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end())) << "key k: seq " << t[1] << " landed after seq " << t[0];
  EXPECT_EQ(kafka_.DeliveredSeqs("u").size(), 1u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(Live("u"), 0u);
}

uint64_t Discarded(wal::Wal& wal, const std::string& topic, const std::string& reason) {
  return wal.GetStats().topics[topic].discarded[reason].count;
}

TEST_F(DrainInflight, ExpiresEntriesTheClientHeldForALeaderlessPartitionBeforeItWasKnown) {
  kafka_.leaders["t"] = {false};
  metadata_fails_ = true;  // the agent starts without the topic's partitions: the client routes
  {
    DrainOptions o;
    o.max_message_age_ms = 2000;
    StartDrain(o);
  }
  Append("t", 3, {"a", "b"});
  Run(50);  // 0.5 s: in the client, which waits for a leader
  ASSERT_EQ(kafka_.produced.size(), 3u);
  for (const FakeKafka::Produced& p : kafka_.produced) ASSERT_EQ(p.partition, kAnyPartition);
  metadata_fails_ = false;  // the next answer: partition 0 has no leader
  Run(300);                 // 3.5 s: past the limit, a purge interval and the settle delay
  EXPECT_EQ(Discarded(*wal_, "t", "expired"), 3u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_TRUE(kafka_.delivered.empty());
}

// The metadata names a leader for the partition, but the client cannot send there (a
// leader lost while the metadata still names it, or failing): its message timeout counts
// from the produce, so an entry produced late would stay there up to twice the limit
// (drain_sim seed 15942206463: 21 s with a limit of 11).
TEST_F(DrainInflight, AnEntryTheClientHoldsPastTheAgeLimitIsTakenBackAndExpired) {
  kafka_.leaders["t"] = {true};
  {
    DrainOptions o;
    o.max_message_age_ms = 2000;
    StartDrain(o);
  }
  kafka_.unreachable.insert({"t", 0});
  Append("t", 1, {"k"});
  Run(50);  // 0.5 s: produced, queued in the client
  ASSERT_EQ(kafka_.produced.size(), 1u);
  Run(300);  // 3.5 s: past the limit, an expire interval, a purge interval and the settle
  EXPECT_EQ(Discarded(*wal_, "t", "expired"), 1u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_GE(kafka_.purges, 1);
  EXPECT_TRUE(kafka_.delivered.empty());
  // The partition works again: what comes next is delivered.
  kafka_.unreachable.clear();
  Append("t", 2, {"k"});
  Run(100);
  EXPECT_EQ(kafka_.DeliveredSeqs("t"), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(DrainInflight, EntriesTheClientHeldForALeaderlessPartitionLeaveTheWindowToOtherTopics) {
  kafka_.leaders["t"] = {false, true};
  kafka_.leaders["ok"] = {true};
  metadata_fails_ = true;
  {
    DrainOptions o;
    o.max_inflight_messages = 4;
    StartDrain(o);
  }
  const std::vector<std::string> key = KeysFor(0, 2, 1);
  Append("t", 4, key);  // the whole window, held by the client for partition 0
  Run(50);
  ASSERT_EQ(kafka_.produced.size(), 4u);
  metadata_fails_ = false;
  Append("ok", 2);
  Run(500);  // 5 s
  EXPECT_EQ(kafka_.DeliveredSeqs("ok").size(), 2u) << "a healthy topic waited for the window";
  EXPECT_TRUE(kafka_.DeliveredSeqs("t").empty());
  kafka_.leaders["t"] = {true, true};
  Run(300);
  std::vector<uint64_t> t = kafka_.DeliveredSeqs("t", 0);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(Live("ok"), 0u);
}

}  // namespace
}  // namespace kspool::agent
