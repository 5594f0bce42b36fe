// TokenBucket with a hand-set clock: rate, burst, debt for oversized requests, the wait
// it reports, and time that goes backwards.
#include "base/token_bucket.h"

#include <gtest/gtest.h>

namespace kspool {
namespace {

TEST(TokenBucket, StartsFullAndRefusesBeyondTheBurst) {
  TokenBucket b(1000, 1000, 0);
  EXPECT_EQ(b.Take(600, 0), 0);
  EXPECT_EQ(b.Take(400, 0), 0);
  EXPECT_EQ(b.Take(1, 0), 1) << "1 token at 1000/s: 1 ms";
  EXPECT_EQ(b.tokens(0), 0);
}

TEST(TokenBucket, RefillsAtTheRateUpToTheBurst) {
  TokenBucket b(1000, 1000, 0);
  ASSERT_EQ(b.Take(1000, 0), 0);
  EXPECT_EQ(b.Take(500, 250), 250) << "250 ms gave 250 tokens; 250 more need 250 ms";
  EXPECT_EQ(b.Take(500, 500), 0);
  EXPECT_DOUBLE_EQ(b.tokens(60'000), 1000) << "never more than the burst";
}

TEST(TokenBucket, RefusalTakesNothing) {
  TokenBucket b(100, 100, 0);
  ASSERT_EQ(b.Take(90, 0), 0);
  EXPECT_GT(b.Take(20, 0), 0);
  EXPECT_DOUBLE_EQ(b.tokens(0), 10);
}

TEST(TokenBucket, ARequestLargerThanTheBurstNeedsAFullBucketAndLeavesADebt) {
  TokenBucket b(1000, 1000, 0);
  ASSERT_EQ(b.Take(1, 0), 0);
  EXPECT_EQ(b.Take(10'000, 0), 1) << "waits for a full bucket, not for 10,000 tokens";
  EXPECT_EQ(b.Take(10'000, 1), 0);
  EXPECT_DOUBLE_EQ(b.tokens(1), -9000);
  // The debt is paid at the rate: 10 s until a full bucket again.
  EXPECT_EQ(b.Wait(1000, 1), 10'000);
  EXPECT_EQ(b.Take(1000, 10'001), 0);
}

TEST(TokenBucket, ASenderAtTenTimesTheRateGetsTheRate) {
  TokenBucket b(1000, 1000, 0);
  uint64_t taken = 0;
  for (int64_t t = 0; t < 10'000; ++t) {  // 10 messages a millisecond for 10 s
    if (b.Take(10, t) == 0) taken += 10;
  }
  EXPECT_GE(taken, 10'000u);
  EXPECT_LE(taken, 11'000u) << "10 s at 1000/s plus one burst";
}

TEST(TokenBucket, TimeGoingBackGrantsNothingAndTakesNothing) {
  TokenBucket b(1000, 1000, 10'000);
  ASSERT_EQ(b.Take(1000, 10'000), 0);
  EXPECT_DOUBLE_EQ(b.tokens(5'000), 0) << "no refill, and not negative";
  EXPECT_EQ(b.Wait(100, 5'000), 5'000 + 100)
      << "until time passes the last refill again, then 100 ms";
  EXPECT_DOUBLE_EQ(b.tokens(10'000), 0) << "back where it was: still nothing added";
  EXPECT_DOUBLE_EQ(b.tokens(10'100), 100) << "then refilled from the last refill only";
}

}  // namespace
}  // namespace kspool
