// The drain's reconciliation at start (agent/drain/drain_reconcile.cc) against a scripted
// Reconciler: what waits for which release, what a copy found does, and the hold bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/agent/drain/reconcile_fixture.h"
#include "tests/support/fault_fs.h"

namespace kspool::testing {
namespace {

TEST_F(DrainReconcile, InDoubtEntriesWaitForTheirTopicWhileOtherTopicsDeliver) {
  kafka_.leaders["a"] = {true, true};
  kafka_.leaders["b"] = {true, true};
  Append("a", 4, KeysFor(0, 2, 2));  // seqs 1..4, all bound for partition 0
  Append("b", 3);                    // seqs 5..7, no key
  StartReconciling();
  Run(5);
  ASSERT_EQ(reconciler_.asked.size(), 2u);
  EXPECT_TRUE(kafka_.produced.empty()) << "nothing in doubt goes before its topic is read";
  reconciler_.Release("b", {0, 1}, /*all=*/true);
  Run(10);
  EXPECT_EQ(ProducedOf("b"), (std::vector<uint64_t>{5, 6, 7}));
  EXPECT_TRUE(ProducedOf("a").empty()) << "topic a is still being reconciled";
  EXPECT_EQ(Live("b"), 0u);
  EXPECT_EQ(drain_->Reconciling().size(), 1u);
  EXPECT_EQ(drain_->Reconciling()[0].topic, "a");
}

TEST_F(DrainReconcile, CopiesFoundAreSettledAtTheirOffsetAndNotProducedAgain) {
  kafka_.leaders["a"] = {true, true};
  Append("a", 4, KeysFor(1, 2, 1));  // seqs 1..4 on partition 1
  StartReconciling();
  Run(3);
  reconciler_.Release("a", {0, 1}, true, {{1, 1, 40}, {2, 1, 41}});
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(Live("a"), 0u);
  std::vector<wal::Outcome> out;
  ASSERT_TRUE(wal_->LookupDeliveries({1, 2, 3}, &out).ok());
  EXPECT_EQ(out[0].state, wal::Outcome::State::kDelivered);
  EXPECT_EQ(out[0].partition, 1);
  EXPECT_EQ(out[0].offset, 40);
  EXPECT_EQ(out[1].offset, 41);
  EXPECT_EQ(out[2].state, wal::Outcome::State::kDelivered);
  absl::StatusOr<std::vector<wal::Watermark>> wm = wal_->WatermarksOf("a");
  ASSERT_TRUE(wm.ok());
  ASSERT_FALSE(wm->empty());
  EXPECT_EQ(metrics_.found, 2u);
  EXPECT_EQ(drain_->reconciled_found(), 2u);
  EXPECT_TRUE(drain_->Reconciling().empty());
}

TEST_F(DrainReconcile, KeyedLaneWaitsForItsKeysPartitionsOnlyAndNewEntriesOfItsKeysWaitBehind) {
  kafka_.leaders["a"] = {true, true};
  Append("a", 2, KeysFor(0, 2, 1));  // 1, 2: partition 0 (under 1 partition too)
  Append("a", 2, KeysFor(1, 2, 1));  // 3, 4: partition 1 (0 if the topic had 1)
  Append("a", 2);                    // 5, 6: no key
  StartReconciling();
  Append("a", 1, KeysFor(0, 2, 1));  // 7: new, partition 0's key
  Append("a", 1, KeysFor(1, 2, 1));  // 8: new, partition 1's key
  Append("a", 1);                    // 9: new, no key
  Run(5);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{9})) << "only what is not in doubt goes";
  reconciler_.Release("a", {0}, /*all=*/false);
  Run(10);
  std::vector<uint64_t> got = ProducedOf("a");
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<uint64_t>{1, 2, 7, 9}))
      << "partition 0 is read: its keys go; partition 1's and in-doubt unkeyed wait";
  reconciler_.Release("a", {1}, /*all=*/true, {{5, 1, 7}});
  Run(40);
  got = ProducedOf("a");
  EXPECT_EQ(got.size(), 8u);  // 5 was found
  EXPECT_FALSE(Produced(5));
  auto at = [&](uint64_t seq) { return std::find(got.begin(), got.end(), seq) - got.begin(); };
  EXPECT_LT(at(1), at(7));
  EXPECT_LT(at(2), at(7));
  EXPECT_LT(at(3), at(8));
  EXPECT_LT(at(4), at(8));
  EXPECT_EQ(Live("a"), 0u);
}

// A key whose partition under each count (count -> partition) is as given.
std::string KeyWith(const std::map<int, int>& partitions) {
  for (int i = 0;; ++i) {
    std::string k = "key-" + std::to_string(i);
    if (std::all_of(partitions.begin(), partitions.end(), [&](const auto& cp) {
          return agent::KeyPartition(k, cp.first) == cp.second;
        })) {
      return k;
    }
  }
}

// The topic has 4 partitions at the restart; it may have had 2 or 3 when the previous
// process produced, and the copy is then where the key went under that count.
TEST_F(DrainReconcile, KeyedEntryWaitsForEveryPartitionItsKeyHadUnderASmallerCount) {
  kafka_.leaders["a"] = {true, true, true, true};
  const std::string moved = KeyWith({{2, 1}, {3, 0}, {4, 3}});   // 0, 1 or 3
  const std::string stayed = KeyWith({{2, 0}, {3, 0}, {4, 0}});  // always 0
  Append("a", 1, {moved});                                       // 1
  Append("a", 1, {stayed});                                      // 2
  StartReconciling();
  Run(5);
  reconciler_.Release("a", {0, 2, 3}, /*all=*/false);
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{2}))
      << "seq 1's key was on partition 1 while the topic had 2: its copy may be there";
  reconciler_.Release("a", {1}, /*all=*/true, {{1, 1, 40}});
  Run(10);
  EXPECT_FALSE(Produced(1)) << "its copy was found on partition 1";
  EXPECT_EQ(Live("a"), 0u);
}

// The routing bounds say topic a was routed with 2 partitions from seq 1 on: a keyed
// in-doubt entry then waits for its key's partition of today only.
TEST_F(DrainReconcile, KeyedEntryOfATopicWhoseCountNeverChangedWaitsForItsPartitionOnly) {
  kafka_.leaders["a"] = {true, true};
  ASSERT_TRUE(wal_->SaveRoutingBound("a", {1, 2}).ok());
  Append("a", 2, KeysFor(1, 2, 1));  // 1, 2: partition 1
  StartReconciling();
  Run(5);
  reconciler_.Release("a", {1}, /*all=*/false);
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2})) << "partition 0 need not be read";
}

// Once the topic's partitions are known, the WAL has a bound saying how many, before
// any keyed entry goes out; after the topic grows, a new one from the first entry not
// read yet.
TEST_F(DrainReconcile, RoutingBoundIsSavedWhenTheTopicIsFirstRoutedAndAgainWhenItGrows) {
  kafka_.leaders["a"] = {true, true};
  StartReconciling();
  Append("a", 1);  // 1
  Run(5);
  ASSERT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1}));
  EXPECT_EQ(*wal_->RoutingBounds("a"), (std::vector<wal::RoutingBound>{{1, 2}}));
  Append("a", 3, {"k"});  // 2..4
  Run(5);
  ASSERT_EQ(ProducedOf("a").size(), 4u);
  EXPECT_EQ(*wal_->RoutingBounds("a"), (std::vector<wal::RoutingBound>{{1, 2}}));
  kafka_.leaders["a"] = {true, true, true, true};
  Run(200);               // the layout is looked up again
  Append("a", 2, {"k"});  // 5, 6
  Run(20);
  ASSERT_EQ(ProducedOf("a").size(), 6u);
  const std::vector<wal::RoutingBound> bounds = *wal_->RoutingBounds("a");
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[1].partitions, 4);
  EXPECT_GE(bounds[1].from_seq, 5u) << "entries 2..4 went out with 2 partitions";
  EXPECT_EQ(wal::LowestRoutedCount(bounds, 3), 2);
}

// While the topic's partitions are unknown, keyed entries go out partitioned by the
// client, by a count the drain does not know: a bound of one partition is saved first,
// so that after a crash they wait for every partition their key may have had.
TEST_F(DrainReconcile, AKeyedEntryPartitionedByTheClientSavesABoundOfOnePartitionFirst) {
  kafka_.leaders["a"] = {true, true};
  metadata_fails_ = true;
  StartReconciling();
  Append("a", 2, {"k"});
  Run(5);
  ASSERT_EQ(ProducedOf("a").size(), 2u);
  EXPECT_EQ(*wal_->RoutingBounds("a"), (std::vector<wal::RoutingBound>{{1, 1}}));
  EXPECT_EQ(wal::LowestRoutedCount(*wal_->RoutingBounds("a"), 2), 1);
}

TEST_F(DrainReconcile, KeyedEntriesWaitWhileTheirRoutingBoundCannotBeSaved) {
  auto fs = std::make_shared<FaultInjectionFileSystem>();
  {
    wal::Options o;
    o.dir = dir_.sub("faulty-wal");
    o.clock = &clock_;
    o.env = EnvFor(fs);
    absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    ReplaceWal(std::move(w).value());
  }
  kafka_.leaders["a"] = {true, true};
  StartReconciling();
  Append("a", 2, {"k"});
  fs->FailNextSyncs(1);  // the bound's
  Run(1);
  EXPECT_TRUE(ProducedOf("a").empty()) << "produced with no bound saved";
  EXPECT_GE(metrics_.degraded["routing_bound_unsaved"], 1);
  Run(30);  // the WAL is reopened, the bound saved
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(wal_->RoutingBounds("a")->size(), 1u);
}

// New unkeyed entries go to any partition while the topic is reconciled; settled there,
// they must not raise the watermark of a partition not read back yet: after a crash
// the next start would read above a copy from before this one.
TEST_F(DrainReconcile, DeliveriesToAPartitionNotReadBackYetLeaveItsWatermark) {
  kafka_.leaders["a"] = {true, true};
  Append("a", 1, KeysFor(0, 2, 1));  // 1: in doubt
  StartReconciling();
  Append("a", 6);  // 2..7: new, no key
  Run(20);
  ASSERT_EQ(ProducedOf("a").size(), 6u);
  ASSERT_EQ(Live("a"), 1u);
  EXPECT_TRUE(wal_->WatermarksOf("a")->empty()) << "no partition is read back yet";
  reconciler_.Release("a", {0, 1}, /*all=*/true);
  Append("a", 2);
  Run(20);
  EXPECT_EQ(Live("a"), 0u);
  EXPECT_FALSE(wal_->WatermarksOf("a")->empty());
}

TEST_F(DrainReconcile, HoldEndsAtTheBoundAndTheEntriesAreProduced) {
  kafka_.leaders["a"] = {true};
  Append("a", 3);
  StartReconciling(/*max_hold_ms=*/1000);
  Run(50, 10);  // 500 ms
  EXPECT_TRUE(kafka_.produced.empty());
  Run(100, 10);
  EXPECT_EQ(ProducedOf("a").size(), 3u);
  EXPECT_EQ(metrics_.ended_early["max_hold"], 1);
  EXPECT_EQ(Live("a"), 0u);
  EXPECT_TRUE(drain_->Reconciling().empty());
}

TEST_F(DrainReconcile, EndedEarlyIsCountedByReasonAndItsEntriesProduced) {
  kafka_.leaders["a"] = {true};
  Append("a", 2);
  StartReconciling();
  Run(3);
  reconciler_.Release("a", {0}, true, {{1, 0, 3}}, "max_bytes");
  Run(10);
  EXPECT_EQ(ProducedOf("a"), (std::vector<uint64_t>{2}));
  EXPECT_EQ(metrics_.ended_early["max_bytes"], 1);
  EXPECT_EQ(metrics_.bytes, 100u);
}

TEST_F(DrainReconcile, CopyFoundForAnEntryNotYetReadIsSettledWhenRead) {
  kafka_.leaders["a"] = {true};
  kafka_.leaders["b"] = {true};
  Append("a", 1);
  Append("b", 6);  // 2..7: beyond a window of 2 at first
  agent::DrainOptions o;
  o.reconciler = &reconciler_;
  o.metrics = &metrics_;
  o.max_inflight_messages = 2;
  StartDrain(o);
  Run(3);
  reconciler_.Release("a", {0}, true);
  reconciler_.Release("b", {0}, true, {{6, 0, 9}, {7, 0, 10}});
  Run(60);
  EXPECT_EQ(ProducedOf("b"), (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(Live("b"), 0u);
  std::vector<wal::Outcome> out;
  ASSERT_TRUE(wal_->LookupDeliveries({7}, &out).ok());
  EXPECT_EQ(out[0].offset, 10);
}

TEST_F(DrainReconcile, EntriesAppendedAfterStartAreNeverHeld) {
  kafka_.leaders["c"] = {true, true};
  StartReconciling();
  Append("c", 3, {"k"});
  Run(5);
  EXPECT_EQ(ProducedOf("c").size(), 3u);
  EXPECT_TRUE(reconciler_.asked.empty());
}

}  // namespace
}  // namespace kspool::testing
