// Suspects (agent/drain/drain_reconcile.cc): entries this process produced whose attempt
// may be in Kafka unreported — in flight when the producer was replaced after a fatal
// error, or reported failed although possibly persisted — are reconciled again before
// they go out again, against a scripted Reconciler.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/agent/drain/reconcile_fixture.h"

namespace kspool::testing {
namespace {

class DrainSuspects : public DrainReconcile {
 protected:
  // The round the drain asked for `topic` last (0: none).
  uint64_t RoundAsked(const std::string& topic) const {
    auto it = reconciler_.asked_again.find(topic);
    return it == reconciler_.asked_again.end() ? 0 : it->second.second;
  }
  static agent::DeliveryReport PossiblyPersisted() {
    agent::DeliveryReport r = FakeKafka::Transient("_MSG_TIMED_OUT");
    r.possibly_persisted = true;
    return r;
  }
};

TEST_F(DrainSuspects, EntriesInFlightWhenTheProducerIsReplacedAreReconciledBeforeTheyGoAgain) {
  kafka_.leaders["a"] = {true, true};
  kafka_.leaders["b"] = {true};
  StartReconciling();
  Append("a", 3, KeysFor(1, 2, 1));  // 1..3, partition 1
  kafka_.hold = {1, 2, 3};           // on the wire, unanswered
  Run(3);
  ASSERT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2, 3}));
  kafka_.turn_fatal = kafka_.producers_made;
  Run(1);  // taken back from the client while on the wire: possibly persisted
  kafka_.hold.clear();
  Run(100);  // replaced after its backoff; topic b is not held meanwhile
  Append("b", 2);
  Run(5);
  EXPECT_EQ(ProducedOf("b").size(), 2u);
  EXPECT_EQ(kafka_.producers_made, 2);
  ASSERT_GT(RoundAsked("a"), 0u) << "a round of reconciliation for topic a";
  EXPECT_TRUE(reconciler_.asked_again.count("b") == 0);
  EXPECT_EQ(ProducedOf("a").size(), 3u) << "nothing of topic a goes again before the round ends";
  // Entry 1 landed before the fatal error: found, settled there, never produced again.
  reconciler_.Release("a", {0, 1}, true, {{1, 1, 40}}, "", RoundAsked("a"));
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2, 3, 2, 3}));
  EXPECT_EQ(Live("a"), 0u);
  std::vector<wal::Outcome> out;
  ASSERT_TRUE(wal_->LookupDeliveries({1}, &out).ok());
  EXPECT_EQ(out[0].state, wal::Outcome::State::kDelivered);
  EXPECT_EQ(out[0].offset, 40);
  EXPECT_EQ(metrics_.found, 1u);
}

TEST_F(DrainSuspects, AnEntryReportedPossiblyPersistedIsReconciledBeforeItGoesAgain) {
  kafka_.leaders["a"] = {true, true};
  StartReconciling();
  Append("a", 1, KeysFor(1, 2, 1));  // 1
  Append("a", 1);                    // 2: no key
  kafka_.fail_once[1] = PossiblyPersisted();
  kafka_.hold = {2};
  Run(3);
  ASSERT_GT(RoundAsked("a"), 0u);
  kafka_.hold.clear();
  Run(50);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2})) << "1 waits for the round";
  EXPECT_EQ(Live("a"), 1u);
  reconciler_.Release("a", {0, 1}, true, {{1, 1, 7}}, "", RoundAsked("a"));
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Live("a"), 0u);
  std::vector<wal::Outcome> out;
  ASSERT_TRUE(wal_->LookupDeliveries({1}, &out).ok());
  EXPECT_EQ(out[0].offset, 7);
}

TEST_F(DrainSuspects, AFailedAttemptNotPossiblyPersistedGoesAgainWithoutARound) {
  kafka_.leaders["a"] = {true, true};
  StartReconciling();
  Append("a", 1, KeysFor(1, 2, 1));
  kafka_.fail_once[1] = FakeKafka::Transient("NOT_LEADER_OR_FOLLOWER");
  Run(50);
  EXPECT_EQ(RoundAsked("a"), 0u);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(Live("a"), 0u);
}

// A round asked before a newer suspect's attempt may have read past where that attempt
// landed: its copies count, its releases do not.
TEST_F(DrainSuspects, AnOlderRoundReleasesNothingOnceANewerOneIsAsked) {
  kafka_.leaders["a"] = {true, true};
  StartReconciling();
  Append("a", 1, KeysFor(1, 2, 1));  // 1
  kafka_.fail_once[1] = PossiblyPersisted();
  Run(3);
  const uint64_t first = RoundAsked("a");
  ASSERT_GT(first, 0u);
  Append("a", 1, KeysFor(0, 2, 1));  // 2, partition 0: held by the round too
  Run(3);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1}));
  kafka_.fail_once[2] = PossiblyPersisted();
  reconciler_.Release("a", {0}, false, {}, "", first);  // partition 0 read
  Run(3);
  ASSERT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2}));
  const uint64_t second = RoundAsked("a");
  ASSERT_GT(second, first);
  reconciler_.Release("a", {0, 1}, true, {}, "", first);  // the older round ends: ignored
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2}));
  reconciler_.Release("a", {0, 1}, true, {}, "", second);
  Run(10);
  std::vector<uint64_t> produced = ProducedOf("a");
  ASSERT_EQ(produced.size(), 4u);
  std::sort(produced.begin() + 2, produced.end());  // two partitions: either order
  EXPECT_EQ(produced, (std::vector<uint64_t>{1, 2, 1, 2}));
  EXPECT_EQ(Live("a"), 0u);
}

// A copy a round finds for a suspect is outside its partition's report order: entries
// delivered there before it may still wait for their reports, at lower offsets. Its
// settle leaves the partition's watermark, or after a crash the restart would read from
// above those copies and produce them again (drain_sim seed 55316735746).
TEST_F(DrainSuspects, ACopyFoundForASuspectLeavesTheWatermarkBelowReportsStillAwaited) {
  kafka_.leaders["a"] = {true, true};
  kafka_.log_end[{"a", 1}] = 10;
  StartReconciling();
  Append("a", 1, KeysFor(1, 2, 1));  // 1, partition 1: in Kafka at 10, its report late
  Append("a", 1);                    // 2, no key: reported failed, possibly persisted
  kafka_.hold = {1};
  kafka_.fail_once[2] = PossiblyPersisted();
  Run(3);
  ASSERT_GT(RoundAsked("a"), 0u);
  reconciler_.Release("a", {0, 1}, true, {{2, 1, 11}}, "", RoundAsked("a"));
  Run(10);
  std::vector<wal::Outcome> out;
  ASSERT_TRUE(wal_->LookupDeliveries({1, 2}, &out).ok());
  ASSERT_EQ(out[1].state, wal::Outcome::State::kDelivered) << "2 settled where it was found";
  EXPECT_EQ(out[1].offset, 11);
  EXPECT_EQ(Live("a"), 1u) << "1 still waits for its report";
  absl::StatusOr<std::vector<wal::Watermark>> wm = wal_->WatermarksOf("a");
  ASSERT_TRUE(wm.ok()) << wm.status();
  for (const wal::Watermark& w : *wm) {
    EXPECT_LT(w.offset, 10) << "partition " << w.partition << ": above 1's copy, not settled";
  }
  kafka_.hold.clear();
  Run(10);
  EXPECT_EQ(Live("a"), 0u);
  wm = wal_->WatermarksOf("a");
  ASSERT_TRUE(wm.ok() && wm->size() == 1) << "1's own report raises it";
  EXPECT_EQ(wm->front().offset, 10);
}

}  // namespace
}  // namespace kspool::testing
