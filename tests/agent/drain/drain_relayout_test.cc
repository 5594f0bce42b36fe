// A topic whose partition count changes twice before the drain could route its keyed
// entries again (an entry of the topic stays in the client meanwhile): what was read
// under the passing count is routed again too, in per-key order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

class DrainRelayout : public testing::DrainFixture {};

// The topic grows from 2 partitions to 4 while one of its entries is in the client (its
// report late): Reroute waits for it, and an entry of the key read meanwhile takes its
// lane by 4, partition 3. The topic is then recreated with 2 partitions, the count its
// lanes were routed by before: the entry in lane 3 must be routed again, not refused
// for a partition that no longer exists while a newer entry of its key goes to its
// partition by 2 (found by drain_sim, seed 104744652995: defect 16).
TEST_F(DrainRelayout, KeyedEntryReadUnderAPassingPartitionCountIsRoutedAgainInOrder) {
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    const std::string k = "key-" + std::to_string(i);
    if (KeyPartition(k, 4) == 3) key = k;
  }
  kafka_.leaders["t"] = {true, true};
  StartDrain();
  Append("t", 1, {key});
  Run(5);
  ASSERT_EQ(kafka_.delivered.size(), 1u);
  const uint64_t held = wal_->GetStats().next_seq;
  kafka_.hold.insert(held);  // its report comes late
  Append("t", 1, {}, /*partition=*/0);
  Run(2);
  // Two partitions added; the agent's metadata learns it within a second.
  kafka_.leaders["t"] = {true, true, true, true};
  Run(150);
  const uint64_t older = wal_->GetStats().next_seq;
  Append("t", 1, {key});
  Run(5);
  ASSERT_EQ(kafka_.produced.size(), 2u) << drain_->DebugString();  // the topic waits
  // Recreated with 2 partitions; the report comes once the agent knows.
  kafka_.leaders["t"] = {true, true};
  Run(150);
  kafka_.hold.clear();
  Append("t", 1, {key});
  Run(300);
  ASSERT_EQ(kafka_.delivered.size(), 4u) << drain_->DebugString();
  std::vector<uint64_t> of_key;
  for (const testing::FakeKafka::Produced& p : kafka_.delivered) {
    if (!p.key) continue;
    of_key.push_back(p.seq);
    EXPECT_EQ(p.partition, KeyPartition(key, 2)) << "seq " << p.seq;
  }
  ASSERT_EQ(of_key.size(), 3u);
  EXPECT_EQ(of_key[1], older);
  EXPECT_LT(of_key[1], of_key[2]);
  EXPECT_EQ(Live("t"), 0u);
}

}  // namespace
}  // namespace kspool::agent
