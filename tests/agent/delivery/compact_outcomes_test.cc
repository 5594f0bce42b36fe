// CompactOutcomes: a waiting Send's outcomes in 24 bytes per message, given back whole.
#include "agent/delivery/compact_outcomes.h"

#include <gtest/gtest.h>

namespace kspool::agent {
namespace {

TEST(CompactOutcomes, HoldsTwentyFourBytesPerMessagePlusItsDistinctStrings) {
  CompactOutcomes c;
  c.Reset(10000);
  EXPECT_EQ(c.bytes(), 10000u * 24);
  for (uint64_t i = 0; i < 10000; ++i) {
    ASSERT_TRUE(c.Set(i, wal::Outcome::Delivered(100 + i, i % 2 ? "odd" : "even", 3, 7 + i, 5)));
  }
  EXPECT_EQ(c.bytes(), 10000u * 24 + 2 * CompactOutcomes::kStringBytes + 3 + 4)
      << "two topics, each kept once";
  EXPECT_LE(c.bytes(), CompactOutcomes::EstimateBytes(10000, 2, 7))
      << "the estimate charged before the append covers it";
  for (uint64_t i = 0; i < 100; ++i) {
    ASSERT_FALSE(c.Set(i, wal::Outcome::Delivered(100 + i, "odd", 0, 0))) << "the first stands";
  }
  EXPECT_EQ(c.bytes(), 10000u * 24 + 2 * CompactOutcomes::kStringBytes + 3 + 4);
}

TEST(CompactOutcomes, ExpandsToTheOutcomesAsTheyCame) {
  CompactOutcomes c;
  c.Reset(4);
  EXPECT_FALSE(c.has(0));
  ASSERT_TRUE(c.Set(0, wal::Outcome::Delivered(50, "t", 2, 900, 1234)));
  ASSERT_TRUE(c.Set(1, wal::Outcome::Discarded(51, "u", "msg_size_too_large", "too big", 77)));
  ASSERT_TRUE(c.Set(2, wal::Outcome::Discarded(52, "u", "msg_size_too_large", "too big", 78)));
  EXPECT_TRUE(c.has(0));
  EXPECT_FALSE(c.has(3));
  std::vector<wal::Outcome> out = c.Expand(50);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].seq, 50u);
  EXPECT_EQ(out[0].state, wal::Outcome::State::kDelivered);
  EXPECT_EQ(out[0].topic, "t");
  EXPECT_EQ(out[0].partition, 2);
  EXPECT_EQ(out[0].offset, 900);
  EXPECT_EQ(out[0].time_ms, 1234);
  for (int i : {1, 2}) {
    EXPECT_EQ(out[i].seq, 50u + i);
    EXPECT_EQ(out[i].state, wal::Outcome::State::kDiscarded);
    EXPECT_EQ(out[i].topic, "u");
    EXPECT_EQ(out[i].partition, -1);
    EXPECT_EQ(out[i].offset, -1);
    EXPECT_EQ(out[i].discard_reason, "msg_size_too_large");
    EXPECT_EQ(out[i].error, "too big");
  }
  EXPECT_EQ(out[2].time_ms, 78);
  EXPECT_EQ(out[3].seq, 53u);
  EXPECT_EQ(out[3].state, wal::Outcome::State::kUnknown) << "no outcome came for it";
  EXPECT_TRUE(out[3].topic.empty());
  EXPECT_EQ(c.size(), 0u) << "expanding gives the memory back";
  EXPECT_EQ(c.bytes(), 0u);
}

TEST(CompactOutcomes, ARequestOfThousandsOfTopicsKeepsEachOnceAndWithinTheEstimate) {
  CompactOutcomes c;
  c.Reset(3000);
  size_t topic_bytes = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    const std::string topic = "topic-" + std::to_string(i % 1000);
    if (i < 1000) topic_bytes += topic.size();
    ASSERT_TRUE(c.Set(i, wal::Outcome::Delivered(i, topic, 0, static_cast<int64_t>(i))));
  }
  EXPECT_LE(c.bytes(), CompactOutcomes::EstimateBytes(3000, 1000, topic_bytes));
  std::vector<wal::Outcome> out = c.Expand(0);
  ASSERT_EQ(out.size(), 3000u);
  for (uint64_t i = 0; i < 3000; ++i) {
    EXPECT_EQ(out[i].topic, "topic-" + std::to_string(i % 1000)) << i;
    EXPECT_EQ(out[i].offset, static_cast<int64_t>(i));
  }
}

}  // namespace
}  // namespace kspool::agent
