// The drain under faults of its inputs: a WAL read that fails part way, metadata lookups
// that fail, partitions that stay without a leader past --max-message-age.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "agent/drain/discard_reasons.h"
#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

using testing::FakeKafka;

using DrainFaults = testing::DrainFixture;

TEST_F(DrainFaults, ReadErrorPartWayNeverProducesAnEntryTwice) {
  kafka_.leaders["t"] = {true};
  {
    DrainOptions o;
    o.stuck_after_ms = 200;
    StartDrain(o);
  }
  Append("t", 1);
  Run(1);  // the agent's metadata now says partition 0 has a leader
  ASSERT_EQ(kafka_.DeliveredSeqs("t").size(), 1u);
  kafka_.leaders["t"] = {false};  // gone; the messages wait in the client
  Append("t", 10);
  log_->FailNextScanAfter(5);  // five entries taken, then the read fails
  Run(3);
  ASSERT_EQ(log_->failed_scans(), 1);
  kafka_.leaders["t"] = {true};
  Run(300);
  std::vector<uint64_t> delivered = kafka_.DeliveredSeqs("t");
  EXPECT_EQ(std::set<uint64_t>(delivered.begin(), delivered.end()).size(), delivered.size())
      << "an entry was delivered twice";
  EXPECT_EQ(delivered.size(), 11u);
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(wal_->GetStats().topics["t"].delivered.count, 11u);
  EXPECT_EQ(drain_->inflight(), 0u);
  // The topic's window count went back to zero: it is idle, not reported stuck.
  EXPECT_TRUE(drain_->Stuck().empty());
}

TEST_F(DrainFaults, ReadErrorWhileEntriesWaitForALeaderKeepsThemOnce) {
  kafka_.leaders["t"] = {false};
  {
    DrainOptions o;
    o.stuck_after_ms = 200;
    StartDrain(o);
  }
  Append("t", 6, {}, /*partition=*/0);
  log_->FailNextScanAfter(3);
  Run(20);
  ASSERT_EQ(log_->failed_scans(), 1);
  EXPECT_EQ(drain_->inflight(), 6u);
  kafka_.leaders["t"] = {true};
  Run(200);  // the agent's metadata learns of the leader within a second
  std::vector<uint64_t> delivered = kafka_.DeliveredSeqs("t", 0);
  EXPECT_EQ(delivered.size(), 6u);
  EXPECT_TRUE(std::is_sorted(delivered.begin(), delivered.end()));
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(drain_->inflight(), 0u);
  EXPECT_TRUE(drain_->Stuck().empty());
}

}  // namespace
}  // namespace kspool::agent
