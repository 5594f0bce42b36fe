// Taking back messages queued in the client for a partition that lost its leader takes
// back only that partition's: the others stay queued, produced once.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

class DrainPurge : public testing::DrainFixture {};

TEST_F(DrainPurge, LostLeaderTakesBackOnlyThatPartitionsQueuedMessages) {
  kafka_.leaders["t"] = {true, true};
  StartDrain();
  Append("t", 1, {}, /*partition=*/0);
  Run(2);  // the layout is known: partition 1 has a leader
  // Partition 1 loses its leader; the agent's metadata learns it within a second, and
  // meanwhile its messages wait in the client.
  kafka_.leaders["t"][1] = false;
  Append("t", 5, {}, /*partition=*/1);
  for (int i = 0; i < 150; ++i) {
    Append("t", 1, {}, /*partition=*/0);  // produced in the pass that takes back p1's
    Run(1);
  }
  EXPECT_GE(kafka_.purges, 1);
  std::map<uint64_t, int> produced;
  for (const testing::FakeKafka::Produced& p : kafka_.produced) {
    if (p.partition == 0) ++produced[p.seq];
  }
  EXPECT_EQ(produced.size(), 151u);
  for (const auto& [seq, n] : produced) EXPECT_EQ(n, 1) << "seq " << seq << " produced again";

  kafka_.leaders["t"][1] = true;
  Run(200);
  std::vector<uint64_t> p1 = kafka_.DeliveredSeqs("t", 1);
  EXPECT_EQ(p1.size(), 5u);
  EXPECT_TRUE(std::is_sorted(p1.begin(), p1.end()));
  EXPECT_EQ(Live("t"), 0u);
}

}  // namespace
}  // namespace kspool::agent
