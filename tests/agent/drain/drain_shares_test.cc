// The window's fair shares when more topics have work than the window holds messages:
// every topic still makes progress, and the window's bound holds.
#include <gtest/gtest.h>

#include <string>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

class DrainShares : public testing::DrainFixture {};

TEST_F(DrainShares, EveryTopicDeliversWhenTopicsOutnumberTheWindow) {
  constexpr int kTopics = 15;
  for (int t = 0; t < kTopics; ++t) kafka_.leaders["t" + std::to_string(t)] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 10;
    StartDrain(o);
  }
  for (int round = 0; round < 20; ++round) {
    for (int t = 0; t < kTopics; ++t) Append("t" + std::to_string(t), 1);
  }
  for (int i = 0; i < 200; ++i) {
    drain_->RunOnce(0);
    EXPECT_LE(drain_->inflight(), 10u);
    clock_.Advance(10);
  }
  for (int t = 0; t < kTopics; ++t) {
    EXPECT_EQ(kafka_.DeliveredSeqs("t" + std::to_string(t)).size(), 20u) << "topic t" << t;
  }
  EXPECT_EQ(wal_->GetStats().entries, 0u);
}

TEST_F(DrainShares, BusyTopicsTakeTurnsWhenTheyOutnumberTheWindow) {
  // Topics keep getting new entries: the first ones by name must not take every turn.
  constexpr int kTopics = 6;
  for (int t = 0; t < kTopics; ++t) kafka_.leaders["t" + std::to_string(t)] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 4;
    StartDrain(o);
  }
  for (int t = 0; t < kTopics; ++t) Append("t" + std::to_string(t), 30);
  Run(30);
  for (int t = 0; t < kTopics; ++t) {
    EXPECT_GE(kafka_.DeliveredSeqs("t" + std::to_string(t)).size(), 5u) << "topic t" << t;
  }
  EXPECT_LE(drain_->inflight(), 4u);
}

TEST_F(DrainShares, TopicsWhoseEntriesOutsizeTheirByteShareTakeTurns) {
  // Three topics with work and room for two entries: each entry is larger than a
  // topic's third of the bytes. Two topics fill the window while the third waits; none
  // may be evicted below one entry, or the window empties every pass and nothing moves.
  for (const char* t : {"t0", "t1", "t2"}) kafka_.leaders[t] = {true};
  for (const char* t : {"t0", "t1", "t2"}) Append(t, 5, {}, -1, /*value_bytes=*/200);
  std::vector<wal::Entry> first;
  ASSERT_TRUE(wal_->Scan(0, 1, 1u << 20, &first).ok());
  ASSERT_EQ(first.size(), 1u);
  {
    DrainOptions o;
    o.max_inflight_bytes = 2 * first[0].size;  // the entries are all the same size
    StartDrain(o);
  }
  Run(100);
  for (const char* t : {"t0", "t1", "t2"}) {
    EXPECT_EQ(kafka_.DeliveredSeqs(t).size(), 5u) << "topic " << t;
  }
  EXPECT_EQ(wal_->GetStats().entries, 0u);
}

}  // namespace
}  // namespace kspool::agent
