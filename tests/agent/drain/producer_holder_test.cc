// ProducerHolder: the backoff between replacements after losses in a row, its reset by
// a delivery, and the recycle interval.
#include "agent/drain/producer_holder.h"

#include <gtest/gtest.h>

#include "tests/agent/drain/fake_producer.h"

namespace kspool::agent {
namespace {

TEST(ProducerHolder, LossesInARowDoubleTheBackoffUpToItsMaxAndADeliveryResetsIt) {
  testing::FakeKafka kafka;
  ProducerHolder p(kafka.Factory(), 100, 350);
  ASSERT_TRUE(p.Create().ok());
  ASSERT_TRUE(p);
  p.Drop(1000);  // first loss: 100 ms
  EXPECT_FALSE(p);
  EXPECT_FALSE(p.ReplacementDue(1099));
  EXPECT_TRUE(p.ReplacementDue(1100));
  ASSERT_TRUE(p.Replace().ok());
  EXPECT_EQ(p.replaced(), 1u);
  EXPECT_FALSE(p.ReplacementDue(5000)) << "one is in place";
  p.Drop(2000);  // second loss in a row: 200 ms
  EXPECT_FALSE(p.ReplacementDue(2199));
  EXPECT_TRUE(p.ReplacementDue(2200));
  p.Drop(3000);  // third (its replacement failed, say): 400, capped at 350
  EXPECT_FALSE(p.ReplacementDue(3349));
  EXPECT_TRUE(p.ReplacementDue(3350));
  ASSERT_TRUE(p.Replace().ok());
  p.Delivered();
  p.Drop(4000);  // after a delivery: 100 ms again
  EXPECT_TRUE(p.ReplacementDue(4100));
}

TEST(ProducerHolder, AFailedFactoryKeepsTheCurrentProducerOnARecycleAndWaitsTheInterval) {
  testing::FakeKafka kafka;
  bool fail = false;
  ProducerFactory inner = kafka.Factory();
  ProducerHolder p(
      [&]() -> absl::StatusOr<std::unique_ptr<Producer>> {
        if (fail) return absl::UnavailableError("no producer today");
        return inner();
      },
      100, 1000);
  ASSERT_TRUE(p.Create().ok());
  Producer* first = p.get();
  EXPECT_TRUE(p.RecycleAllowed(10, 500)) << "never recycled yet";
  fail = true;
  EXPECT_EQ(p.Recycle(10).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(p.get(), first);
  EXPECT_EQ(p.recycled(), 0u);
  EXPECT_FALSE(p.RecycleAllowed(509, 500));
  EXPECT_TRUE(p.RecycleAllowed(510, 500));
  fail = false;
  ASSERT_TRUE(p.Recycle(510).ok());
  EXPECT_NE(p.get(), nullptr);
  EXPECT_EQ(p.recycled(), 1u);
}

}  // namespace
}  // namespace kspool::agent
