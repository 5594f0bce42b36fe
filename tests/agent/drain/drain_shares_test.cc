// The window's fair shares when more topics have work than the window holds messages:
// every topic still makes progress, and the window's bound holds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

using testing::FakeKafka;

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

TEST_F(DrainShares, EvictionNeverTakesAFailedEntryWhoseNewerKeyMateIsInKafka) {
  // A key's older entry failed and waits for its retry while its newer one is still in
  // the client (its report late). The partition loses its leader: the lane is over its
  // share, but the older entry must stay in the window. Left unread, it would be read
  // again only after the newer one, taken back from the client, went out first.
  kafka_.leaders["t"] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 4;  // a leaderless partition's share: one entry
    o.retry_backoff_ms = 1000;
    o.retry_backoff_max_ms = 1000;
    o.purge_interval_ms = 10;
    StartDrain(o);
  }
  Run(1);  // the agent's metadata knows the topic
  Append("t", 2, {"k"});
  std::vector<wal::Entry> entries;
  ASSERT_TRUE(wal_->Scan(0, 2, 1u << 20, &entries).ok());
  ASSERT_EQ(entries.size(), 2u);
  const uint64_t older = entries[0].seq, newer = entries[1].seq;
  kafka_.fail_once[older] = FakeKafka::Transient("REQUEST_TIMED_OUT");
  kafka_.hold.insert(newer);
  Run(1);  // both produced; the older one failed, the newer one's report is late
  ASSERT_EQ(kafka_.produced.size(), 2u);
  kafka_.leaders["t"] = {false};
  Run(150);  // the agent learns of it; the newer one is taken back from the client
  kafka_.hold.clear();
  kafka_.leaders["t"] = {true};
  Run(300);
  EXPECT_EQ(kafka_.DeliveredSeqs("t"), (std::vector<uint64_t>{older, newer}));
  EXPECT_EQ(Live("t"), 0u);
}

}  // namespace
}  // namespace kspool::agent
