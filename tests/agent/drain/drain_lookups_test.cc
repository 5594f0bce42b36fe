// Keyed entries while the agent's metadata lookups fail: a key's entries keep their
// order whether the topic's layout changed just before the lookups began to fail, or
// was never known (the producer then partitions the entries itself).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

class DrainLookups : public testing::DrainFixture {
 protected:
  // A key whose partition is `before` of `from` partitions and `after` of `to`.
  static std::string KeyMoving(int from, int32_t before, int to, int32_t after) {
    for (int i = 0;; ++i) {
      const std::string k = "key-" + std::to_string(i);
      if (KeyPartition(k, from) == before && KeyPartition(k, to) == after) return k;
    }
  }
  // The key's delivered entries, (partition, seq) in delivery order.
  std::vector<std::pair<int32_t, uint64_t>> Delivered(const std::string& key) const {
    std::vector<std::pair<int32_t, uint64_t>> out;
    for (const testing::FakeKafka::Produced& p : kafka_.delivered) {
      if (p.key == key) out.push_back({p.partition, p.seq});
    }
    return out;
  }
};

// A partition is added while a key's entry waits for its retry in the lane of the old
// count, and another entry of the topic is in the client (the topic waits for its
// report before routing again). Then the lookups fail: the layout keeps the new count,
// by which a newer entry of the key is routed. It must not go out before the topic is
// routed again (found by drain_sim, seed 551615562661: defect 12).
TEST_F(DrainLookups, KeyedEntriesRoutedByTheOldCountKeepTheirOrderWhileLookupsFail) {
  const std::string key = KeyMoving(2, 1, 3, 0);
  kafka_.leaders["t"] = {true, true};
  {
    DrainOptions o;
    o.retry_backoff_ms = 20000;  // not due before the end of the lookup failures
    o.retry_backoff_max_ms = 20000;
    StartDrain(o);
  }
  const uint64_t held = wal_->GetStats().next_seq;
  kafka_.hold.insert(held);  // its report comes late
  Append("t", 1, {}, /*partition=*/0);
  kafka_.fail_once[held + 1] = testing::FakeKafka::Transient("REQUEST_TIMED_OUT");
  Append("t", 1, {key});  // fails, and waits for its retry in lane 1
  Run(2);
  ASSERT_EQ(kafka_.produced.size(), 2u) << drain_->DebugString();
  kafka_.leaders["t"] = {true, true, true};
  Run(150);  // the agent learns of the third partition
  metadata_fails_ = true;
  Run(150);  // and its next lookup fails
  Append("t", 1, {key});
  Run(5);
  kafka_.hold.clear();
  Run(500);
  metadata_fails_ = false;
  Run(200);
  const std::vector<std::pair<int32_t, uint64_t>> delivered = Delivered(key);
  ASSERT_EQ(delivered.size(), 2u) << drain_->DebugString();
  EXPECT_LT(delivered[0].second, delivered[1].second) << "the newer entry went first";
  EXPECT_EQ(delivered[1].first, 0);
  EXPECT_EQ(Live("t"), 0u);
}

// The topic's layout was never known (every lookup fails): the producer partitions the
// entries itself, by the partitions it knows. A key's entry is in the client for the
// third partition when the topic is recreated with two: a newer entry of the key, sent
// in a later round, would go to the key's partition of two and land, then the older one
// fail as an unknown partition and land after it. A round goes out only once the
// producer answered the last (found by drain_sim, seed 553153596482: defect 14).
TEST_F(DrainLookups, KeyedEntriesThePartitionerRoutesKeepTheirOrderWhenTheTopicShrinks) {
  const std::string key = KeyMoving(3, 2, 2, 0);
  kafka_.leaders["t"] = {true, true, true};
  kafka_.partition_by_key = true;
  metadata_fails_ = true;
  StartDrain();
  const uint64_t first = wal_->GetStats().next_seq;
  kafka_.hold.insert(first);  // its report comes late
  Append("t", 1, {key});
  Run(2);
  ASSERT_EQ(kafka_.produced.size(), 1u) << drain_->DebugString();
  ASSERT_EQ(kafka_.produced[0].partition, 2);
  kafka_.leaders["t"] = {true, true};  // deleted and recreated
  Append("t", 1, {key});
  Run(5);
  kafka_.hold.clear();
  Run(300);
  const std::vector<std::pair<int32_t, uint64_t>> delivered = Delivered(key);
  ASSERT_EQ(delivered.size(), 2u) << drain_->DebugString();
  EXPECT_EQ(delivered[0].second, first) << "the newer entry went first";
  EXPECT_EQ(delivered[0].first, 0);
  EXPECT_EQ(delivered[1].first, 0);
  EXPECT_EQ(Live("t"), 0u);
}

}  // namespace
}  // namespace kspool::agent
