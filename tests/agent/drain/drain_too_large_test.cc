// A batch the broker refuses as too large (a topic's max.message.bytes): its messages are
// produced again alone, and only a message too large by itself goes to the dead letters.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

class DrainTooLarge : public testing::DrainFixture {};

TEST_F(DrainTooLarge, MessagesOfABatchTooLargeAreSentAloneAndOnlyOneTooLargeAloneIsDiscarded) {
  kafka_.leaders["t"] = {true, true};
  kafka_.max_batch["t"] = 3;
  StartDrain();
  const std::vector<std::string> keys = KeysFor(0, 2, 2);
  Append("t", 8, keys);
  const uint64_t big = 5;  // the fifth entry is too large even alone
  kafka_.too_large.insert(big);
  Run(300);
  std::vector<uint64_t> delivered = kafka_.DeliveredSeqs("t", 0);
  EXPECT_EQ(delivered.size(), 7u);
  EXPECT_TRUE(std::is_sorted(delivered.begin(), delivered.end()));
  EXPECT_EQ(std::count(delivered.begin(), delivered.end(), big), 0);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(wal_->GetStats().topics["t"].discarded["msg_size_too_large"].count, 1u);
  EXPECT_EQ(wal_->GetStats().topics["t"].delivered.count, 7u);
}

}  // namespace
}  // namespace kspool::agent
