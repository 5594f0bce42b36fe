// SeqRuns: sequence numbers as runs; what Settle() keeps above a held-back head.
#include "wal/seq_runs.h"

#include <gtest/gtest.h>

namespace kspool::wal {
namespace {

TEST(SeqRuns, ConsecutiveNumbersFormOneRunInAnyOrder) {
  SeqRuns r;
  for (uint64_t s : {5, 7, 6, 9, 8, 4}) r.Add(s);
  EXPECT_EQ(r.runs(), 1u);
  EXPECT_EQ(r.RunEnd(4), 10u);
  EXPECT_EQ(r.RunEnd(7), 10u);
  EXPECT_EQ(r.RunEnd(3), 3u) << "not in the set";
  EXPECT_EQ(r.RunEnd(10), 10u);
  r.Add(6);
  EXPECT_EQ(r.runs(), 1u) << "adding a member changes nothing";
}

TEST(SeqRuns, ManySettledAroundAFewLiveOnesAreAFewRuns) {
  // A stuck entry every 1000 sequence numbers, everything else settled: one run per gap,
  // however many messages.
  SeqRuns r;
  for (uint64_t s = 2; s < 100'000; ++s) {
    if (s % 1000 != 0) r.Add(s);
  }
  EXPECT_EQ(r.runs(), 100u);
  EXPECT_EQ(r.RunEnd(2), 1000u);
  EXPECT_EQ(r.RunEnd(1000), 1000u);
  EXPECT_EQ(r.RunEnd(1001), 2000u);
}

TEST(SeqRuns, EraseBelowCutsARunInTwo) {
  SeqRuns r;
  for (uint64_t s = 10; s < 20; ++s) r.Add(s);
  r.Add(30);
  r.EraseBelow(15);
  EXPECT_EQ(r.RunEnd(14), 14u);
  EXPECT_EQ(r.RunEnd(15), 20u);
  EXPECT_EQ(r.runs(), 2u);
  r.EraseBelow(31);
  EXPECT_EQ(r.runs(), 0u);
}

}  // namespace
}  // namespace kspool::wal
