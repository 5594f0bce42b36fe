// SeqSketch: what a difference of two sketches names, and what it refuses to guess.
#include "base/seq_sketch.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace kspool {
namespace {

TEST(SeqSketch, TheDifferenceOfTwoRunsNamesWhatOneLacksAndWhatTheOtherHasTwice) {
  SeqSketch delivered, read;
  for (uint64_t s = 1; s <= 100'000; ++s) delivered.Add(s);
  for (uint64_t s = 1; s <= 100'000; ++s) {
    if (s == 17 || s == 50'000) continue;  // lost downstream
    read.Add(s);
    if (s == 99'999) read.Add(s);  // duplicated downstream
  }
  SeqSketch diff = delivered;
  diff.Subtract(read);
  EXPECT_EQ(diff.count(), 1);  // two missing, one extra
  SeqSketch::Decoded d = diff.Decode();
  ASSERT_TRUE(d.complete);
  EXPECT_EQ(d.positive, (std::vector<uint64_t>{17, 50'000}));
  EXPECT_EQ(d.negative, (std::vector<uint64_t>{99'999}));
}

TEST(SeqSketch, OrderDoesNotMatterAndEqualMultisetsLeaveAnEmptyDifference) {
  std::vector<uint64_t> seqs;
  for (uint64_t s = 1; s <= 5'000; ++s) seqs.push_back(s * 7919);
  SeqSketch a, b;
  for (uint64_t s : seqs) a.Add(s);
  std::mt19937_64 rng(7);
  std::shuffle(seqs.begin(), seqs.end(), rng);
  for (uint64_t s : seqs) b.Add(s);
  EXPECT_EQ(a, b);
  a.Subtract(b);
  EXPECT_TRUE(a.empty());
  SeqSketch::Decoded d = a.Decode();
  EXPECT_TRUE(d.complete);
  EXPECT_TRUE(d.positive.empty() && d.negative.empty());
}

TEST(SeqSketch, ANumberReadThreeTimesMoreThanDeliveredIsNamedThreeTimes) {
  SeqSketch diff;
  diff.Add(1'234'567, -3);
  diff.Add(42, -2);
  diff.Add(9, 4);
  SeqSketch::Decoded d = diff.Decode();
  ASSERT_TRUE(d.complete);
  EXPECT_EQ(d.negative, (std::vector<uint64_t>{42, 42, 1'234'567, 1'234'567, 1'234'567}));
  EXPECT_EQ(d.positive, (std::vector<uint64_t>{9, 9, 9, 9}));
}

TEST(SeqSketch, ADifferenceTooLargeToNameSaysSoAndNamesNothingFalse) {
  SeqSketch diff;
  std::set<uint64_t> lost;
  for (uint64_t s = 1; s <= 400; ++s) {
    diff.Add(s * 3);
    lost.insert(s * 3);
  }
  SeqSketch::Decoded d = diff.Decode();
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(diff.count(), 400);
  for (uint64_t s : d.positive) EXPECT_TRUE(lost.count(s)) << s << " was never added";
  EXPECT_TRUE(d.negative.empty());
}

TEST(SeqSketch, NamesEveryDifferenceOfAFewDozenInMostRandomRuns) {
  // 20 numbers apart (a fifth of the cells): a peel fails rarely (6 runs in 1000).
  std::mt19937_64 rng(42);
  int complete = 0;
  for (int run = 0; run < 200; ++run) {
    SeqSketch diff;
    std::multiset<uint64_t> want;
    for (int i = 0; i < 20; ++i) {
      const uint64_t s = rng() % 1'000'000'000;
      diff.Add(s);
      want.insert(s);
    }
    SeqSketch::Decoded d = diff.Decode();
    if (!d.complete) continue;
    ++complete;
    EXPECT_EQ(std::multiset<uint64_t>(d.positive.begin(), d.positive.end()), want);
  }
  EXPECT_GE(complete, 190) << "of 200";
}

TEST(SeqSketch, SerializeParsesBackAndAWrongLengthIsRefused) {
  SeqSketch a;
  for (uint64_t s = 10; s < 1000; s += 3) a.Add(s);
  a.Add(77, -2);
  absl::StatusOr<SeqSketch> b = SeqSketch::Parse(a.Serialize());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, a);
  EXPECT_EQ(b->count(), a.count());
  absl::StatusOr<SeqSketch> bad = SeqSketch::Parse(a.Serialize().substr(1));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("2304 bytes, not 2303"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace kspool
