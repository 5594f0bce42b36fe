// The drain replaces a producer that has produced to more topic names than
// DrainOptions::producer_max_topics, and only at a quiet moment: the new one produces
// what is left, nothing is produced twice, nothing is waited on.
#include <gtest/gtest.h>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::testing {
namespace {

class DrainRecycle : public DrainFixture {
 protected:
  void StartWithBound(size_t topics) {
    agent::DrainOptions o;
    o.producer_max_topics = topics;
    o.producer_recycle_min_ms = 1000;
    StartDrain(o);
  }
};

TEST_F(DrainRecycle, AProducerPastTheBoundIsReplacedOnceNothingIsInFlight) {
  for (int i = 0; i < 5; ++i) kafka_.leaders["t" + std::to_string(i)] = {true};
  StartWithBound(3);
  for (int i = 0; i < 5; ++i) Append("t" + std::to_string(i), 1);
  kafka_.hold.insert(5);  // t4's entry: its report is late
  Run(20);
  EXPECT_EQ(kafka_.producers_made, 1) << "a report is due: not quiet";
  EXPECT_EQ(drain_->producers_recycled(), 0u);
  kafka_.hold.clear();
  Run(20);
  EXPECT_EQ(kafka_.producers_made, 2);
  EXPECT_EQ(drain_->producers_recycled(), 1u);
  EXPECT_EQ(kafka_.produced.size(), 5u) << "nothing produced twice";
  EXPECT_EQ(kafka_.delivered.size(), 5u);
  // The new producer delivers; within producer_recycle_min_ms it is not replaced again.
  for (int i = 0; i < 5; ++i) Append("t" + std::to_string(i), 1);
  Run(20);
  EXPECT_EQ(kafka_.delivered.size(), 10u);
  EXPECT_EQ(kafka_.producers_made, 2);
  Run(100);
  EXPECT_EQ(kafka_.producers_made, 3) << "past the bound again, quiet, and the interval over";
}

TEST_F(DrainRecycle, WithinTheBoundTheProducerStays) {
  for (int i = 0; i < 3; ++i) kafka_.leaders["t" + std::to_string(i)] = {true};
  StartWithBound(3);
  for (int i = 0; i < 3; ++i) Append("t" + std::to_string(i), 2);
  Run(200);
  EXPECT_EQ(kafka_.delivered.size(), 6u);
  EXPECT_EQ(kafka_.producers_made, 1);
  EXPECT_EQ(drain_->producers_recycled(), 0u);
}

}  // namespace
}  // namespace kspool::testing
