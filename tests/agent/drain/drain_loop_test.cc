// DrainLoop's logic against a scripted Kafka (tests/agent/drain/fake_producer.h), a real WAL in
// a temp dir and a manual clock: deterministic, one pass of the loop at a time.
#include "agent/drain/drain_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/agent/drain/drain_fixture.h"
#include "tests/agent/drain/fake_producer.h"
#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::agent {
namespace {

using testing::FakeKafka;

class Drain : public testing::DrainFixture {};

TEST_F(Drain, StuckTopicHoldsBackOnlyItselfAndItsCommitPoint) {
  kafka_.leaders["stuck"] = {false, false};
  kafka_.leaders["ok"] = {true, true};
  {
    DrainOptions o;
    o.max_inflight_messages = 100;
    StartDrain(o);
  }
  const int64_t stuck_rt = Append("stuck", 500);
  clock_.Advance(10);
  const int64_t ok_rt = Append("ok", 50);
  Run(50);
  EXPECT_EQ(kafka_.DeliveredSeqs("ok").size(), 50u);
  EXPECT_EQ(Live("ok"), 0u);
  EXPECT_TRUE(kafka_.DeliveredSeqs("stuck").empty());
  EXPECT_LE(drain_->inflight(), 100u);
  wal::CommitPoints cp = tracker_->Current();
  EXPECT_GE(cp.topics_ms["ok"], ok_rt);
  EXPECT_LT(cp.global_ms, stuck_rt);
  EXPECT_LT(cp.topics_ms["stuck"], stuck_rt);

  kafka_.leaders["stuck"] = {true, true};
  Run(300);
  EXPECT_EQ(kafka_.DeliveredSeqs("stuck").size(), 500u);
  EXPECT_EQ(wal_->GetStats().entries, 0u);
  EXPECT_GE(tracker_->Current().global_ms, ok_rt);
}

TEST_F(Drain, StuckTopicThatFilledTheWindowFirstMakesRoomForANewcomer) {
  kafka_.leaders["stuck"] = {false};
  kafka_.leaders["ok"] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 100;
    o.stuck_after_ms = 2000;
    StartDrain(o);
  }
  Append("stuck", 150);
  Run(5);
  EXPECT_EQ(drain_->inflight(), 100u);
  Append("ok", 30);
  Run(300);  // 3 s: a full window is looked past once a topic in it is slow (1 s)
  EXPECT_EQ(kafka_.DeliveredSeqs("ok").size(), 30u);
  EXPECT_EQ(Live("ok"), 0u);
  EXPECT_LE(drain_->inflight(), 100u);
  ASSERT_EQ(drain_->Stuck().size(), 1u);
  EXPECT_EQ(drain_->Stuck()[0].topic, "stuck");
  EXPECT_EQ(drain_->Stuck()[0].leaderless_partitions, std::vector<int32_t>{0});
  EXPECT_GE(drain_->Stuck()[0].stuck_seconds, 2.0);
}

TEST_F(Drain, LeaderlessPartitionHoldsBackOnlyItsKeys) {
  kafka_.leaders["t"] = {true, false, true};
  StartDrain();
  std::vector<std::string> keys = KeysFor(0, 3, 5);
  for (const std::string& k : KeysFor(1, 3, 5)) keys.push_back(k);
  for (const std::string& k : KeysFor(2, 3, 5)) keys.push_back(k);
  Append("t", 60, keys);
  Run(20);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 20u);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 2).size(), 20u);
  for (const FakeKafka::Produced& p : kafka_.produced) EXPECT_NE(p.partition, 1) << p.seq;

  kafka_.leaders["t"][1] = true;
  Run(200);
  std::vector<uint64_t> p1 = kafka_.DeliveredSeqs("t", 1);
  EXPECT_EQ(p1.size(), 20u);
  EXPECT_TRUE(std::is_sorted(p1.begin(), p1.end()));
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(Drain, KeyedMessagesForALeaderlessPartitionCannotFillTheWindow) {
  kafka_.leaders["t"] = {true, false, true};
  {
    DrainOptions o;
    o.max_inflight_messages = 100;
    StartDrain(o);
  }
  std::vector<std::string> keys = KeysFor(0, 3, 1);
  keys.push_back(KeysFor(1, 3, 1)[0]);
  keys.push_back(KeysFor(2, 3, 1)[0]);
  for (int i = 0; i < 10; ++i) Append("t", 60, keys);  // 200 for each partition
  Run(100);
  // Partition 1 may hold a quarter of the window; the others are not held back by it.
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 200u);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 2).size(), 200u);
  for (const FakeKafka::Produced& p : kafka_.produced) EXPECT_NE(p.partition, 1);
  EXPECT_LE(drain_->inflight(), 25u);
  Append("t", 30, keys);  // newer messages still flow
  Run(50);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 210u);

  kafka_.leaders["t"][1] = true;
  Run(300);
  std::vector<uint64_t> p1 = kafka_.DeliveredSeqs("t", 1);
  EXPECT_EQ(p1.size(), 210u);
  EXPECT_TRUE(std::is_sorted(p1.begin(), p1.end()));
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(Drain, UnkeyedMessagesGoOnlyToPartitionsWithALeader) {
  kafka_.leaders["t"] = {true, false, true};
  StartDrain();
  for (int i = 0; i < 6; ++i) {  // a partition is kept for 10 ms, for larger batches
    Append("t", 5);
    Run(2);
  }
  Run(10);
  EXPECT_EQ(kafka_.DeliveredSeqs("t").size(), 30u);
  for (const FakeKafka::Produced& p : kafka_.produced) EXPECT_NE(p.partition, 1);
  EXPECT_FALSE(kafka_.DeliveredSeqs("t", 0).empty());
  EXPECT_FALSE(kafka_.DeliveredSeqs("t", 2).empty());
}

TEST_F(Drain, UnkeyedMessagesQueuedForALostLeaderAreReroutedWithinTenSeconds) {
  kafka_.leaders["t"] = {true, true, true};
  StartDrain();
  Append("t", 3);
  Run(2);
  ASSERT_EQ(kafka_.DeliveredSeqs("t").size(), 3u);
  // The leader of partition 1 goes; the agent's metadata does not know yet.
  kafka_.leaders["t"][1] = false;
  const int64_t lost_at = clock_.MonotonicMillis();
  for (int i = 0; i < 6; ++i) {  // over 120 ms: the sticky partition rotates through all
    Append("t", 5);
    Run(2);
  }
  int64_t all_at = 0;
  for (int i = 0; i < 1000 && all_at == 0; ++i) {
    Run(1);
    if (kafka_.DeliveredSeqs("t").size() == 33) all_at = clock_.MonotonicMillis();
  }
  ASSERT_NE(all_at, 0) << "not all delivered";
  EXPECT_LE(all_at - lost_at, 10'000);
  EXPECT_GE(kafka_.purges, 1);
  EXPECT_TRUE(kafka_.DeliveredSeqs("t", 1).size() <= 1u);  // only from before the loss
}

TEST_F(Drain, RetryNeverReordersAPartition) {
  kafka_.leaders["t"] = {true, true};
  StartDrain();
  std::vector<std::string> keys = KeysFor(0, 2, 1);
  Append("t", 40, keys);
  kafka_.fail_once[7] = FakeKafka::Transient("REQUEST_TIMED_OUT");
  kafka_.fail_once[20] = FakeKafka::Transient("NOT_LEADER_FOR_PARTITION");
  Run(300);
  std::vector<uint64_t> seqs = kafka_.DeliveredSeqs("t", 0);
  ASSERT_EQ(seqs.size(), 40u);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  EXPECT_GT(drain_->redelivered(), 0u);  // kspool's own retry path ran
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(Drain, EntryFinishedOutOfOrderWaitsTheSettleDelay) {
  kafka_.leaders["t"] = {true, false};
  {
    DrainOptions o;
    o.settle_delay_ms = 50;
    StartDrain(o);
  }
  Append("t", 1, {}, /*partition=*/1);  // parked: no leader
  Append("t", 1, {}, /*partition=*/0);
  drain_->RunOnce(0);
  ASSERT_EQ(kafka_.DeliveredSeqs("t").size(), 1u);
  EXPECT_EQ(Live("t"), 2u);
  clock_.Advance(49);
  drain_->RunOnce(0);
  EXPECT_EQ(Live("t"), 2u);  // still waiting for the prefix to reach it
  clock_.Advance(2);
  drain_->RunOnce(0);
  EXPECT_EQ(Live("t"), 1u);
}

TEST_F(Drain, FatalProducerErrorReplacesTheProducerWithBackoff) {
  kafka_.leaders["t"] = {true};
  kafka_.fatal = "Fatal idempotent producer error";
  {
    DrainOptions o;
    o.producer_backoff_ms = 500;
    StartDrain(o);
  }
  Append("t", 10);
  drain_->RunOnce(0);  // produced, then found fatal: replaced after 500 ms
  EXPECT_EQ(kafka_.producers_made, 1);
  for (int i = 0; i < 49; ++i) {
    clock_.Advance(10);
    drain_->RunOnce(0);
  }
  EXPECT_EQ(kafka_.producers_made, 1);  // 490 ms: not yet
  clock_.Advance(10);
  drain_->RunOnce(0);
  EXPECT_EQ(kafka_.producers_made, 2);  // still fatal: the next wait is 1000 ms
  drain_->RunOnce(0);
  clock_.Advance(990);
  drain_->RunOnce(0);
  EXPECT_EQ(kafka_.producers_made, 2);
  kafka_.fatal.clear();
  clock_.Advance(10);
  Run(20);
  EXPECT_EQ(kafka_.producers_made, 3);
  EXPECT_EQ(kafka_.DeliveredSeqs("t").size(), 10u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(wal_->GetStats().topics["t"].delivered.count, 10u);
}

TEST_F(Drain, WallClockStepsChangeNeitherSettlingNorRetries) {
  kafka_.leaders["t"] = {true};
  {
    DrainOptions o;
    o.retry_backoff_ms = 100;
    StartDrain(o);
  }
  Append("t", 10);
  kafka_.fail_once[3] = FakeKafka::Transient("REQUEST_TIMED_OUT");
  drain_->RunOnce(0);
  const int64_t point = tracker_->Current().global_ms;
  clock_.Set(clock_.NowMillis() - 3'600'000);  // an hour back; monotonic time goes on
  Run(50);                                     // 500 ms
  EXPECT_EQ(kafka_.DeliveredSeqs("t").size(), 10u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_GE(tracker_->Current().global_ms, point);

  clock_.Set(clock_.NowMillis() + 86'400'000 + 3'600'000);  // a day forward
  Append("t", 10);
  kafka_.fail_once[15] = FakeKafka::Transient("REQUEST_TIMED_OUT");
  Run(50);
  EXPECT_EQ(kafka_.DeliveredSeqs("t").size(), 20u);
  EXPECT_EQ(Live("t"), 0u);
}

TEST_F(Drain, UnknownTopicIsDiscardedAfterFreshAnswersWhileOthersFlow) {
  kafka_.leaders["ok"] = {true};
  {
    DrainOptions o;
    o.retry_backoff_ms = 100;
    o.unknown_topic_checks = 3;
    StartDrain(o);
  }
  Append("missing", 5);
  Append("ok", 5);
  Run(300);
  EXPECT_EQ(kafka_.DeliveredSeqs("ok").size(), 5u);
  EXPECT_EQ(Live("missing"), 0u);
  EXPECT_EQ(wal_->GetStats().topics["missing"].discarded["unknown_topic"].count, 5u);
}

// Records what the drain tells its OutcomeListener, and what the WAL's delivery index
// says of each settled outcome at the moment the listener hears of it.
struct RecordingListener : OutcomeListener {
  wal::Wal* wal = nullptr;
  int settled_calls = 0;
  std::vector<wal::Outcome> settled;
  std::vector<wal::Outcome> in_index;  // the index's answer for each of `settled`
  std::vector<wal::Outcome> not_settled;
  std::vector<absl::Status> errors;
  void Settled(const std::vector<wal::Outcome>& outcomes) override {
    ++settled_calls;
    settled.insert(settled.end(), outcomes.begin(), outcomes.end());
    std::vector<uint64_t> seqs;
    for (const wal::Outcome& o : outcomes) seqs.push_back(o.seq);
    EXPECT_TRUE(wal->LookupDeliveries(seqs, &in_index).ok());
  }
  void NotSettled(const std::vector<wal::Outcome>& outcomes, const absl::Status& error) override {
    not_settled.insert(not_settled.end(), outcomes.begin(), outcomes.end());
    errors.push_back(error);
  }
};

TEST_F(Drain, ListenerHearsEachOutcomeOnceWhenItIsInTheDeliveryIndex) {
  kafka_.leaders["t"] = {true};
  RecordingListener listener;
  listener.wal = wal_.get();
  {
    DrainOptions o;
    o.outcomes = &listener;
    StartDrain(o);
  }
  Append("t", 3);
  drain_->RunOnce(0);
  // Settled in the pass that took the acknowledgements, all at once, without the record.
  ASSERT_EQ(listener.settled.size(), 3u);
  EXPECT_EQ(listener.settled_calls, 1);
  for (const wal::Outcome& o : listener.settled) {
    EXPECT_EQ(o.topic, "t");
    EXPECT_EQ(o.state, wal::Outcome::State::kDelivered);
    EXPECT_EQ(o.discard_reason, "");
    EXPECT_EQ(o.offset, 0);
    EXPECT_TRUE(o.raw.empty());
    EXPECT_NE(o.time_ms, 0);
  }
  // What the listener is told, GetDeliveryStatus's source already says.
  ASSERT_EQ(listener.in_index.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(listener.in_index[i].state, wal::Outcome::State::kDelivered);
    EXPECT_EQ(listener.in_index[i].offset, listener.settled[i].offset);
    EXPECT_EQ(listener.in_index[i].time_ms, listener.settled[i].time_ms);
  }
  Run(20);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(listener.settled.size(), 3u);

  // Each outcome is told once.
  Append("t", 2);
  Run(20);
  EXPECT_EQ(Live("t"), 0u);
  ASSERT_EQ(listener.settled.size(), 5u);
  std::set<uint64_t> seqs;
  for (const wal::Outcome& o : listener.settled) EXPECT_TRUE(seqs.insert(o.seq).second) << o.seq;
  EXPECT_TRUE(listener.not_settled.empty());
}

// The window keeps a delivery as its numbers (Slot::delivered); what is settled is the
// whole outcome again: the entry's topic, stored size and receive time, the reported
// partition and offset, and when the report came.
TEST_F(Drain, ASettledDeliveryCarriesItsEntrysSizeReceiveTimeAndReportedPlace) {
  kafka_.leaders["t"] = {true, true, true};
  RecordingListener listener;
  listener.wal = wal_.get();
  {
    DrainOptions o;
    o.outcomes = &listener;
    StartDrain(o);
  }
  Append("t", 4, {}, /*partition=*/2, /*value_bytes=*/40);
  std::map<uint64_t, wal::Entry> stored;
  {
    std::vector<wal::Entry> live;
    ASSERT_TRUE(wal_->Scan(0, 100, 1 << 20, &live).ok());
    for (wal::Entry& e : live) stored[e.seq] = std::move(e);
  }
  ASSERT_EQ(stored.size(), 4u);
  const int64_t reported_at = clock_.NowMillis();
  drain_->RunOnce(0);
  ASSERT_EQ(listener.settled.size(), 4u);
  for (const wal::Outcome& o : listener.settled) {
    ASSERT_EQ(stored.count(o.seq), 1u) << o.seq;
    const wal::Entry& e = stored[o.seq];
    EXPECT_EQ(o.state, wal::Outcome::State::kDelivered);
    EXPECT_EQ(o.topic, "t");
    EXPECT_EQ(o.partition, 2);
    EXPECT_EQ(o.offset, 0);  // the scripted producer's
    EXPECT_EQ(o.size, e.size);
    EXPECT_EQ(o.receive_time_ms, e.record.receive_time_ms);
    EXPECT_EQ(o.time_ms, reported_at);
    EXPECT_TRUE(o.discard_reason.empty());
    EXPECT_TRUE(o.error.empty());
  }
  EXPECT_EQ(Live("t"), 0u);
}

// A settle that fails (a WAL write error, until the WAL reopens) must not leave anyone
// waiting for its outcomes: they are told once as not settled, then once settled.
TEST_F(Drain, ListenerHearsOnceOfOutcomesWhoseSettleFailedAndAgainOnceSettled) {
  auto fs = std::make_shared<kspool::testing::FaultInjectionFileSystem>();
  {
    wal::Options o;
    o.dir = dir_.sub("faulty-wal");
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs);
    absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    ReplaceWal(std::move(w).value());
  }
  kafka_.leaders["t"] = {true};
  RecordingListener listener;
  listener.wal = wal_.get();
  {
    DrainOptions o;
    o.outcomes = &listener;
    o.wal_reopen_interval_ms = 1000;
    StartDrain(o);
  }
  Append("t", 3);
  fs->FailNextSyncs(1'000'000);  // the settle's sync, and every reopen's, fail
  drain_->RunOnce(0);
  ASSERT_EQ(listener.not_settled.size(), 3u);
  EXPECT_FALSE(listener.errors[0].ok());
  for (const wal::Outcome& o : listener.not_settled) {
    EXPECT_EQ(o.state, wal::Outcome::State::kDelivered);
    EXPECT_EQ(o.offset, 0);
    EXPECT_TRUE(o.raw.empty());
    EXPECT_NE(o.time_ms, 0);
  }
  EXPECT_TRUE(listener.settled.empty());
  Run(50);  // settles retried, and a reopen, all failing: not told again
  EXPECT_FALSE(wal_->health().ok());
  EXPECT_EQ(listener.not_settled.size(), 3u);
  EXPECT_TRUE(listener.settled.empty());

  fs->FailNextSyncs(0);
  Run(150);  // past the next reopen
  ASSERT_TRUE(wal_->health().ok());
  EXPECT_EQ(Live("t"), 0u);
  ASSERT_EQ(listener.settled.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    // Put back into the window and taken out again as it was.
    const wal::Outcome& a = listener.not_settled[i];
    const wal::Outcome& b = listener.settled[i];
    EXPECT_EQ(b.seq, a.seq);
    EXPECT_EQ(b.state, a.state);
    EXPECT_EQ(b.topic, a.topic);
    EXPECT_EQ(b.partition, a.partition);
    EXPECT_EQ(b.offset, a.offset);
    EXPECT_EQ(b.time_ms, a.time_ms) << "when Kafka answered, not when the settle succeeded";
  }
  EXPECT_EQ(listener.not_settled.size(), 3u);
  for (const wal::Outcome& o : listener.in_index) {
    EXPECT_EQ(o.state, wal::Outcome::State::kDelivered);
  }
}

}  // namespace
}  // namespace kspool::agent
