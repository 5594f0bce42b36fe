// TopicState's parts: the sticky partitioner of unkeyed entries, and the unread range
// with the check that guards it.
#include "agent/drain/topic_state.h"

#include <gtest/gtest.h>

#include <set>

namespace kspool::agent {
namespace {

TEST(StickyPartitioner, StaysOnOnePartitionUntilItsTimeRunsOutThenMovesRoundRobin) {
  StickyPartitioner sticky;
  auto all = [](int32_t) { return true; };
  EXPECT_EQ(sticky.Pick(3, 0, all), 0);
  EXPECT_EQ(sticky.Pick(3, StickyPartitioner::kStickyMs - 1, all), 0);
  EXPECT_EQ(sticky.Pick(3, StickyPartitioner::kStickyMs, all), 1);
  EXPECT_EQ(sticky.Pick(3, 2 * StickyPartitioner::kStickyMs, all), 2);
  EXPECT_EQ(sticky.Pick(3, 3 * StickyPartitioner::kStickyMs, all), 0);
}

TEST(StickyPartitioner, LeavesAPartitionAsSoonAsItIsNoLongerUsable) {
  StickyPartitioner sticky;
  std::set<int32_t> usable = {0, 1, 2};
  auto pick = [&](int64_t now) {
    return sticky.Pick(3, now, [&](int32_t p) { return usable.count(p) > 0; });
  };
  EXPECT_EQ(pick(0), 0);
  usable.erase(0);  // its leader is gone, or the producer refused it
  EXPECT_EQ(pick(1), 1);
  usable = {2};
  EXPECT_EQ(pick(2), 2);
  EXPECT_EQ(pick(3), 2);
}

TEST(StickyPartitioner, NoneUsableGivesNothingAndForgetsThePartition) {
  StickyPartitioner sticky;
  bool any = true;
  auto usable = [&](int32_t) { return any; };
  EXPECT_EQ(sticky.Pick(2, 0, usable), 0);
  any = false;
  EXPECT_EQ(sticky.Pick(2, 1, usable), std::nullopt);
  EXPECT_EQ(sticky.current(), -1);
  EXPECT_EQ(sticky.Pick(0, 2, [](int32_t) { return true; }), std::nullopt) << "no partitions";
}

TEST(StickyPartitioner, NeverPicksAPartitionTheTopicNoLongerHas) {
  StickyPartitioner sticky;
  auto all = [](int32_t) { return true; };
  EXPECT_EQ(sticky.Pick(4, 0, all), 0);
  EXPECT_EQ(sticky.Pick(4, StickyPartitioner::kStickyMs, all), 1);
  EXPECT_EQ(sticky.Pick(4, 2 * StickyPartitioner::kStickyMs, all), 2);
  // The topic was recreated with one partition while partition 2 was sticky.
  EXPECT_EQ(sticky.Pick(1, 2 * StickyPartitioner::kStickyMs + 1, all), 0);
}

TEST(TopicState, AnUnreadRangeMarksItsLowestEntryAndClearsWhole) {
  TopicState ts;
  EXPECT_TRUE(ts.idle());
  ts.unread.Mark(20, 2000);
  ts.unread.Mark(10, 1000);
  ts.unread.Mark(15, 1500);
  EXPECT_EQ(ts.unread.from, 10u);
  EXPECT_EQ(ts.unread.receive_ms, 1000);
  EXPECT_EQ(ts.unread.scan_from, 10u);
  EXPECT_FALSE(ts.idle());
  EXPECT_TRUE(ts.Check("t").ok());
  ts.unread.skipped_lanes.insert(3);
  ts.unread.Clear();
  EXPECT_EQ(ts.unread.scan_from, 0u);
  EXPECT_TRUE(ts.unread.skipped_lanes.empty());
  EXPECT_TRUE(ts.idle());
  EXPECT_TRUE(ts.Check("t").ok());
}

TEST(TopicState, CheckNamesATopicThatScansBelowItsFirstUnreadEntry) {
  TopicState ts;
  ts.unread.Mark(10, 1000);
  ts.unread.scan_from = 9;
  absl::Status s = ts.Check("orders");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("'orders' scans from 9 below its first unread entry 10"),
            std::string::npos)
      << s;
  ts.unread.from = 0;  // cleared by hand, the scan position left behind
  s = ts.Check("orders");
  EXPECT_NE(s.message().find("nothing unread and scans from 9"), std::string::npos) << s;
}

TEST(TopicState, LaneLoadCountsWaitingAndProducedEntriesOfOnePartition) {
  TopicLanes lanes;
  lanes.Of(2).Insert(5);
  lanes.Of(2).Insert(7);
  lanes.Of(2).waiting.insert(9);
  lanes.Of(kLaneUnordered).Insert(6);
  lanes.in_kafka[2] = 4;
  EXPECT_EQ(lanes.Load(2), 7u);
  EXPECT_EQ(lanes.Load(1), 0u);
  EXPECT_TRUE(lanes.InClient());
  lanes.in_kafka[2] = 0;
  EXPECT_FALSE(lanes.InClient());
  EXPECT_EQ(lanes.unordered.ready.size(), 1u);
}

}  // namespace
}  // namespace kspool::agent
