// Copies found by reconciliation against what the drain did meanwhile: an entry that
// may be in Kafka is not expired before its reconciliation answers, and a copy found
// for an entry already settled never holds its partition's watermark.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "agent/drain/discard_reasons.h"
#include "tests/agent/drain/reconcile_fixture.h"

namespace kspool::testing {
namespace {

class DrainReconcileFound : public DrainReconcile {
 protected:
  void StartAging(uint64_t max_age_ms, uint64_t window = 100000) {
    agent::DrainOptions o;
    o.reconciler = &reconciler_;
    o.metrics = &metrics_;
    o.max_message_age_ms = max_age_ms;
    o.max_inflight_messages = window;
    o.random_seed = 7;
    StartDrain(o);
  }
  wal::Outcome OutcomeOf(uint64_t seq) {
    std::vector<wal::Outcome> out;
    EXPECT_TRUE(wal_->LookupDeliveries({seq}, &out).ok());
    return out.empty() ? wal::Outcome{} : out[0];
  }
  int64_t WatermarkOf(const std::string& topic, int32_t partition) {
    absl::StatusOr<std::vector<wal::Watermark>> wm = wal_->WatermarksOf(topic);
    EXPECT_TRUE(wm.ok()) << wm.status();
    for (const wal::Watermark& w : *wm) {
      if (w.partition == partition) return w.offset;
    }
    return -1;
  }
};

// A restart that took longer than --max-message-age: the entries found in Kafka are
// delivered where they are, not discarded as expired (nor put in the dead letters).
TEST_F(DrainReconcileFound, InDoubtEntriesInTheWindowAreNotExpiredBeforeTheirReconciliation) {
  kafka_.leaders["a"] = {true, true};
  Append("a", 2);                    // 1, 2: no key
  Append("a", 2, KeysFor(1, 2, 1));  // 3, 4: keyed, partition 1
  StartAging(/*max_age_ms=*/1000);
  Run(3);
  clock_.Advance(5000);  // every entry is past the age limit while its topic waits
  Run(30, 50);
  EXPECT_EQ(Live("a"), 4u) << "nothing expires while its reconciliation has not answered";
  EXPECT_TRUE(kafka_.produced.empty());
  reconciler_.Release("a", {0, 1}, /*all=*/true, {{1, 0, 7}, {3, 1, 9}});
  Run(30, 50);
  EXPECT_EQ(Live("a"), 0u);
  EXPECT_TRUE(kafka_.produced.empty()) << "an expired entry is never produced";
  EXPECT_TRUE(OutcomeOf(1).delivered());
  EXPECT_EQ(OutcomeOf(1).offset, 7);
  EXPECT_TRUE(OutcomeOf(3).delivered());
  EXPECT_EQ(OutcomeOf(3).partition, 1);
  EXPECT_EQ(OutcomeOf(3).offset, 9);
  EXPECT_EQ(OutcomeOf(2).discard_reason, agent::kReasonExpired);
  EXPECT_EQ(OutcomeOf(4).discard_reason, agent::kReasonExpired);
  EXPECT_EQ(drain_->discarded(), 2u);
}

// The same for entries left unread (beyond a window of 2): the look at a topic's unread
// entries stops at the first in-doubt one, and asks for the topic's reconciliation.
TEST_F(DrainReconcileFound, UnreadInDoubtEntriesAreNotExpiredBeforeTheirReconciliation) {
  kafka_.leaders["a"] = {true};
  kafka_.leaders["b"] = {true};
  Append("a", 1);  // 1: holds one window place until "a" is released
  Append("b", 6);  // 2..7: beyond the window at first
  StartAging(/*max_age_ms=*/1000, /*window=*/2);
  Run(3);
  clock_.Advance(5000);
  Run(30, 50);
  EXPECT_EQ(Live("b"), 6u) << "nothing expires while its reconciliation has not answered";
  reconciler_.Release("a", {0}, true);
  reconciler_.Release("b", {0}, true, {{6, 0, 20}, {7, 0, 21}});
  Run(60, 50);
  EXPECT_EQ(Live("a") + Live("b"), 0u);
  EXPECT_TRUE(kafka_.produced.empty());
  for (uint64_t seq : {2, 3, 4, 5}) {
    EXPECT_EQ(OutcomeOf(seq).discard_reason, agent::kReasonExpired) << "seq " << seq;
  }
  EXPECT_TRUE(OutcomeOf(6).delivered());
  EXPECT_EQ(OutcomeOf(6).offset, 20);
  EXPECT_TRUE(OutcomeOf(7).delivered());
  EXPECT_EQ(OutcomeOf(7).offset, 21);
}

// A result that names a copy of an entry settled before (a later round re-reading the
// partition, or a result that came after the hold ended) must not freeze the
// partition's watermark: the next start after a crash would read from the stale one.
TEST_F(DrainReconcileFound, CopyOfAnEntrySettledBeforeLeavesTheWatermarkFree) {
  kafka_.leaders["a"] = {true};
  kafka_.log_end[{"a", 0}] = 100;
  Append("a", 1);  // 1: in doubt
  StartReconciling();
  Run(3);
  reconciler_.Release("a", {0}, true, {{1, 0, 5}});
  Run(10);
  ASSERT_EQ(Live("a"), 0u);
  ASSERT_EQ(WatermarkOf("a", 0), 5);
  reconciler_.Release("a", {0}, true, {{1, 0, 5}}, "", /*round=*/3);  // late, again
  Run(5);
  Append("a", 3);  // 2..4: new, delivered at offsets 100..102
  Run(20);
  EXPECT_EQ(Live("a"), 0u);
  EXPECT_EQ(WatermarkOf("a", 0), 102) << "deliveries raise the watermark again";
}

// An in-doubt entry discarded (here: expired after its topic's hold ended) before the
// copy found of it arrives: the same.
TEST_F(DrainReconcileFound, CopyOfAnEntryDiscardedMeanwhileLeavesTheWatermarkFree) {
  kafka_.leaders["a"] = {true};
  kafka_.log_end[{"a", 0}] = 100;
  Append("a", 1);  // 1: in doubt
  StartAging(/*max_age_ms=*/1000);
  Run(3);
  reconciler_.Release("a", {0}, true);  // not found: released, then expired
  clock_.Advance(5000);
  Run(20, 50);
  ASSERT_EQ(OutcomeOf(1).discard_reason, agent::kReasonExpired);
  reconciler_.Release("a", {0}, true, {{1, 0, 5}}, "", /*round=*/2);
  Run(5);
  Append("a", 2);  // 2, 3: new, delivered at offsets 100, 101
  Run(20);
  EXPECT_EQ(Live("a"), 0u);
  EXPECT_EQ(WatermarkOf("a", 0), 101);
}

// A suspect (reported failed, possibly persisted) past the age limit waits for its
// round instead of being expired: it may be in Kafka.
TEST_F(DrainReconcileFound, PossiblyPersistedEntryPastTheAgeLimitWaitsForItsRound) {
  kafka_.leaders["a"] = {true};
  StartAging(/*max_age_ms=*/1000);
  Append("a", 1);         // 1: produced by this process
  kafka_.hold.insert(1);  // its report is late
  kafka_.on_wire.insert(1);  // sent: taking back what the client queues leaves it there
  Run(5);
  ASSERT_TRUE(Produced(1));
  clock_.Advance(5000);  // past the age limit before its report comes
  agent::DeliveryReport timeout = FakeKafka::Transient("REQUEST_TIMED_OUT");
  timeout.possibly_persisted = true;
  kafka_.fail_once[1] = timeout;
  kafka_.hold.erase(1);
  Run(10, 50);
  ASSERT_EQ(reconciler_.asked_again.count("a"), 1u);
  EXPECT_EQ(Live("a"), 1u) << "not expired while its round has not answered";
  reconciler_.Release("a", {0}, true, {{1, 0, 4}}, "", reconciler_.asked_again["a"].second);
  Run(10, 50);
  EXPECT_EQ(Live("a"), 0u);
  EXPECT_TRUE(OutcomeOf(1).delivered());
  EXPECT_EQ(OutcomeOf(1).offset, 4);
}

}  // namespace
}  // namespace kspool::testing
