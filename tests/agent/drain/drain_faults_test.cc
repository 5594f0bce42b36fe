// The drain under faults of its inputs: a WAL read that fails part way, metadata lookups
// that fail, partitions that stay without a leader past --max-message-age.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "agent/drain/discard_reasons.h"
#include "tests/agent/drain/drain_fixture.h"
#include "tests/support/raw_wal.h"

namespace kspool::agent {
namespace {

using testing::FakeKafka;

using DrainFaults = testing::DrainFixture;

TEST_F(DrainFaults, ReadErrorPartWayNeverProducesAnEntryTwice) {
  kafka_.leaders["t"] = {true};
  {
    DrainOptions o;
    o.stuck_after_ms = 200;
    StartDrain(o);
  }
  Append("t", 1);
  Run(1);  // the agent's metadata now says partition 0 has a leader
  ASSERT_EQ(kafka_.DeliveredSeqs("t").size(), 1u);
  kafka_.leaders["t"] = {false};  // gone; the messages wait in the client
  Append("t", 10);
  log_->FailNextScan(5);  // five entries taken, then the read fails
  Run(3);
  ASSERT_EQ(log_->failed_scans(), 1);
  kafka_.leaders["t"] = {true};
  Run(300);
  std::vector<uint64_t> delivered = kafka_.DeliveredSeqs("t");
  EXPECT_EQ(std::set<uint64_t>(delivered.begin(), delivered.end()).size(), delivered.size())
      << "an entry was delivered twice";
  EXPECT_EQ(delivered.size(), 11u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(wal_->GetStats().topics["t"].delivered.count, 11u);
  EXPECT_EQ(drain_->inflight(), 0u);
  // The topic's window count went back to zero: it is idle, not reported stuck.
  EXPECT_TRUE(drain_->Stuck().empty());
}

TEST_F(DrainFaults, ReadErrorWhileEntriesWaitForALeaderKeepsThemOnce) {
  kafka_.leaders["t"] = {false};
  {
    DrainOptions o;
    o.stuck_after_ms = 200;
    StartDrain(o);
  }
  Append("t", 6, {}, /*partition=*/0);
  log_->FailNextScan(3);
  Run(20);
  ASSERT_EQ(log_->failed_scans(), 1);
  EXPECT_EQ(drain_->inflight(), 6u);
  kafka_.leaders["t"] = {true};
  Run(200);  // the agent's metadata learns of the leader within a second
  std::vector<uint64_t> delivered = kafka_.DeliveredSeqs("t", 0);
  EXPECT_EQ(delivered.size(), 6u);
  EXPECT_TRUE(std::is_sorted(delivered.begin(), delivered.end()));
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(drain_->inflight(), 0u);
  EXPECT_TRUE(drain_->Stuck().empty());
}

TEST_F(DrainFaults, KeyNeverOvertakesItsOlderEntryWhileMetadataLookupsFail) {
  kafka_.leaders["t"] = {true, false};
  StartDrain();
  const std::vector<std::string> key = KeysFor(1, 2, 1);
  Append("t", 1, key);  // A: waits in partition 1's lane for a leader
  Run(5);
  ASSERT_TRUE(kafka_.delivered.empty());
  metadata_fails_ = true;  // a controller failover: lookups time out
  Run(110);                // past the cache's refresh: its last answer failed
  ASSERT_TRUE(kafka_.delivered.empty());
  Append("t", 1, key);     // B, same key
  Run(50);
  kafka_.leaders["t"] = {true, true};
  Run(50);
  metadata_fails_ = false;
  Run(200);
  ASSERT_EQ(kafka_.delivered.size(), 2u);
  EXPECT_LT(kafka_.delivered[0].seq, kafka_.delivered[1].seq) << "the newer entry went first";
  for (const FakeKafka::Produced& p : kafka_.produced) EXPECT_EQ(p.partition, 1) << p.seq;
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(DrainFaults, RequeuedKeyedEntryKeepsItsLaneWhileMetadataLookupsFail) {
  kafka_.leaders["t"] = {true, true};
  StartDrain();
  const std::vector<std::string> key = KeysFor(1, 2, 1);
  Append("t", 1, key);
  Run(2);
  ASSERT_EQ(kafka_.delivered.size(), 1u);
  kafka_.leaders["t"] = {true, false};  // the agent does not know yet
  Append("t", 1, key);                  // A: queued in the client for partition 1
  Run(1);
  metadata_fails_ = true;
  Run(110);
  kafka_.fatal = "Fatal idempotent producer error";  // the client is replaced: A comes back
  Append("t", 1, key);                                // B
  Run(5);
  kafka_.fatal.clear();
  kafka_.leaders["t"] = {true, true};
  Run(300);
  metadata_fails_ = false;
  Run(200);
  std::vector<uint64_t> seqs = kafka_.DeliveredSeqs("t");
  ASSERT_EQ(seqs.size(), 3u);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  for (const FakeKafka::Produced& p : kafka_.produced) EXPECT_EQ(p.partition, 1) << p.seq;
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(DrainFaults, EntriesWaitingForALeaderOfADeletedTopicAreDiscardedAsUnknown) {
  kafka_.leaders["t"] = {true, false};
  {
    DrainOptions o;
    o.retry_backoff_ms = 100;
    o.unknown_topic_checks = 3;
    StartDrain(o);
  }
  Append("t", 3, KeysFor(1, 2, 1));  // wait in partition 1's lane
  Run(20);
  ASSERT_EQ(Live("t"), 3u);
  kafka_.leaders.erase("t");  // the topic is deleted
  Run(800);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(wal_->GetStats().topics["t"].discarded["unknown_topic"].count, 3u);
}

uint64_t Discarded(wal::Wal& wal, const std::string& topic, const std::string& reason) {
  return wal.GetStats().topics[topic].discarded[reason].count;
}

TEST_F(DrainFaults, ExpiresEntriesOfALeaderlessPartitionInTheWindowAndUnread) {
  kafka_.leaders["t"] = {true, false};
  {
    DrainOptions o;
    o.max_inflight_messages = 20;  // partition 1 may hold 5 in the window; the rest stay unread
    o.max_message_age_ms = 5000;
    StartDrain(o);
  }
  std::vector<std::string> keys = KeysFor(0, 2, 1);
  keys.push_back(KeysFor(1, 2, 1)[0]);
  const int64_t old_rt = Append("t", 40, keys);  // 20 for each partition
  Run(100);                                       // 1 s
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 20u);
  EXPECT_EQ(Live("t"), 20u);
  EXPECT_LT(tracker_->Current().global_ms, old_rt);
  Run(390);  // 4.9 s: not yet older than the limit
  EXPECT_EQ(Discarded(*wal_, "t", "expired"), 0u);
  Run(120);  // 6.1 s: past the limit plus an expire interval (0.5 s) and the settle delay
  EXPECT_EQ(Discarded(*wal_, "t", "expired"), 20u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_GE(tracker_->Current().global_ms, old_rt);
  EXPECT_EQ(drain_->inflight(), 0u);
  for (const FakeKafka::Produced& p : kafka_.produced) EXPECT_NE(p.partition, 1);

  // Younger entries of the same partition wait for its leader, and go when it is back.
  Append("t", 4, {keys[1]});
  Run(50);
  EXPECT_EQ(Live("t"), 4u);
  kafka_.leaders["t"] = {true, true};
  Run(200);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 1).size(), 4u);
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(DrainFaults, ExpiresAStuckTopicsUnreadEntriesSoTheGlobalCommitPointMovesOn) {
  kafka_.leaders["stuck"] = {false, false};
  kafka_.leaders["ok"] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 100;
    o.max_message_age_ms = 2000;
    StartDrain(o);
  }
  // Keyed: they wait in their partitions' lanes, and beyond a lane's share, unread.
  const int64_t stuck_rt = Append("stuck", 500, {KeysFor(0, 2, 1)[0], KeysFor(1, 2, 1)[0]});
  Run(100);  // 1 s
  EXPECT_EQ(Live("stuck"), 500u);
  EXPECT_LT(tracker_->Current().global_ms, stuck_rt);
  Run(160);  // 2.6 s
  EXPECT_EQ(Discarded(*wal_, "stuck", "expired"), 500u);
  EXPECT_EQ(Live("stuck"), 0u);
  const int64_t ok_rt = Append("ok", 10);
  Run(20);
  EXPECT_EQ(kafka_.DeliveredSeqs("ok").size(), 10u);
  EXPECT_GE(tracker_->Current().global_ms, ok_rt);
  EXPECT_TRUE(kafka_.DeliveredSeqs("stuck").empty());
}

TEST_F(DrainFaults, ExpiresEntriesOfATopicWithoutMetadata) {
  kafka_.leaders["t"] = {true};
  metadata_fails_ = true;  // the topic's partitions are never known
  {
    DrainOptions o;
    o.max_message_age_ms = 1000;
    o.retry_backoff_ms = 10'000;
    o.retry_backoff_max_ms = 10'000;
    StartDrain(o);
  }
  kafka_.fail_once[1] = FakeKafka::Transient("REQUEST_TIMED_OUT");  // the lane backs off
  const int64_t rt = Append("t", 3);
  Run(150);  // 1.5 s, well inside the retry backoff
  EXPECT_EQ(Discarded(*wal_, "t", "expired"), 3u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_GE(tracker_->Current().global_ms, rt);
}

// An entry that does not decode has no receive time to bound the commit point by: while
// it is in the window (discarded, its settle refused), the point stays below it, though
// the entry after it is delivered; once it is settled the point moves on. (A drain that
// passed over undecodable slots when it looks for each topic's oldest fails here.)
TEST_F(DrainFaults, UndecodableEntryHoldsTheCommitPointUntilItIsSettled) {
  kafka_.leaders["t"] = {true};
  const uint64_t corrupt_seq = wal_->GetStats().next_seq;
  const int64_t corrupt_rt = Append("t", 1);
  clock_.Advance(10);
  const int64_t next_rt = Append("t", 1);
  tracker_.reset();
  log_.reset();
  wal_.reset();
  ASSERT_TRUE(testing::EditLogEntry(dir_.sub("wal"), corrupt_seq,
                                    [](std::string* raw) { raw->back() ^= 0x5a; })
                  .ok());
  {
    wal::Options o;
    o.dir = dir_.sub("wal");
    o.clock = &clock_;
    absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    ReplaceWal(std::move(w).value());
  }
  log_->FailSettles(true);
  {
    DrainOptions o;
    o.commit_point_interval_ms = 10;
    StartDrain(o);
  }
  Run(20);
  ASSERT_EQ(kafka_.DeliveredSeqs("t"), std::vector<uint64_t>{corrupt_seq + 1});
  EXPECT_LT(tracker_->Current().global_ms, corrupt_rt) << drain_->DebugString();
  EXPECT_LT(tracker_->Current().topics_ms["t"], corrupt_rt);
  log_->FailSettles(false);
  Run(20);
  EXPECT_EQ(Discarded(*wal_, "t", kReasonCorrupt), 1u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_GE(tracker_->Current().global_ms, next_rt);
}

}  // namespace
}  // namespace kspool::agent
