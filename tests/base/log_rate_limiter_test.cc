#include "base/log_rate_limiter.h"

#include <gtest/gtest.h>

namespace kspool {
namespace {

TEST(LogRateLimiter, AdmitsABurstPerWindowAndCountsTheRest) {
  LogRateLimiter limiter(3, 1000);
  uint64_t suppressed = 99;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limiter.Admit(5000, &suppressed));
    EXPECT_EQ(suppressed, 0u);
  }
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(limiter.Admit(5999, &suppressed));
  ASSERT_TRUE(limiter.Admit(6000, &suppressed)) << "a new window";
  EXPECT_EQ(suppressed, 7u) << "the first line of the new window reports what was dropped";
  ASSERT_TRUE(limiter.Admit(6000, &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

}  // namespace
}  // namespace kspool
