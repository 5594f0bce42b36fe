// A partition without a leader ("parked"), or one the producer does not know yet, holds
// back only its own entries: it keeps at most its share of the window, never its
// topic's whole share, so the topic's other partitions keep delivering.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/agent/drain/drain_fixture.h"

namespace kspool::agent {
namespace {

class DrainParked : public testing::DrainFixture {};

// Two topics with work and a window of two: each topic's share is one entry. t's first
// entry is for partition 0, which has no leader. Taken into the window, it would be t's
// only entry until the leader is back, and partition 1's entries would wait behind it
// (found by drain_sim with crowded windows: defect 10b).
TEST_F(DrainParked, LeaderlessPartitionDoesNotTakeItsTopicsOnlyWindowEntry) {
  kafka_.leaders["t"] = {false, true};
  kafka_.leaders["u"] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 2;
    StartDrain(o);
  }
  kafka_.hold.insert(wal_->GetStats().next_seq);  // u keeps its entry in the client
  Append("u", 1);
  Append("t", 1, {}, /*partition=*/0);
  Append("t", 5, {}, /*partition=*/1);
  Run(100);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 1).size(), 5u) << drain_->DebugString();
  EXPECT_TRUE(kafka_.DeliveredSeqs("t", 0).empty());
  EXPECT_LE(drain_->inflight(), 2u);

  kafka_.leaders["t"][0] = true;  // read again once it has its leader
  kafka_.hold.clear();
  Run(200);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 1u) << drain_->DebugString();
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(Live("u"), 0u);
}

// The same with a key whose partition was just added: the agent's metadata has it, the
// producer's not yet, so its entry fails and waits for its retry. Meanwhile it must not
// hold t's only window entry either (found by drain_sim with partition growth and
// crowded windows: a topic stalled until the producer learned of the new partitions).
TEST_F(DrainParked, KeyWaitingForTheProducerToLearnItsPartitionDoesNotTakeItsTopicsOnlyWindowEntry) {
  kafka_.leaders["t"] = std::vector<bool>(6, true);
  kafka_.client_partitions["t"] = 3;  // the producer's metadata lags
  kafka_.leaders["u"] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 2;
    StartDrain(o);
  }
  kafka_.hold.insert(wal_->GetStats().next_seq);  // u keeps its entry in the client
  Append("u", 1);
  Append("t", 1, KeysFor(4, 6, 1));
  Append("t", 5, {}, /*partition=*/0);
  Run(100);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 5u) << drain_->DebugString();
  EXPECT_TRUE(kafka_.DeliveredSeqs("t", 4).empty());
  EXPECT_LE(drain_->inflight(), 2u);

  kafka_.client_partitions.erase("t");  // the producer learns of partitions 3 to 5
  kafka_.hold.clear();
  Run(300);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 4).size(), 1u) << drain_->DebugString();
  EXPECT_EQ(Live("t"), 0u);
  EXPECT_EQ(Live("u"), 0u);
}

// A byte share of about one entry: the leaderless partition's entries, read first,
// would fill it, and the topic's other partition would wait until the leader is back.
TEST_F(DrainParked, LeaderlessPartitionDoesNotFillItsTopicsByteShare) {
  kafka_.leaders["t"] = {false, true};
  Append("t", 2, {}, /*partition=*/0, /*value_bytes=*/200);
  Append("t", 5, {}, /*partition=*/1, /*value_bytes=*/200);
  std::vector<wal::Entry> first;
  ASSERT_TRUE(wal_->Scan(0, 1, 1u << 20, &first).ok());
  ASSERT_EQ(first.size(), 1u);
  {
    DrainOptions o;
    o.max_inflight_bytes = first[0].size * 3 / 2;  // the entries are all the same size
    StartDrain(o);
  }
  Run(100);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 1).size(), 5u) << drain_->DebugString();
  EXPECT_TRUE(kafka_.DeliveredSeqs("t", 0).empty());

  kafka_.leaders["t"][0] = true;
  Run(200);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 0).size(), 2u) << drain_->DebugString();
  EXPECT_EQ(Live("t"), 0u);
}

// Unkeyed entries after partitions were added, with a window of one message: an entry
// sent to a partition the producer does not know yet is refused. Waiting for a retry
// (its backoff growing with every such refusal) it would hold the topic's only window
// entry; it goes to a partition the producer knows at once instead, and the refusing
// partition is passed over until its retry is due (found by drain_sim with partition
// growth and crowded windows, seeds 238498108642 and 415649735825: defects 11 and 13).
TEST_F(DrainParked, UnkeyedEntryRefusedForAPartitionTheProducerDoesNotKnowGoesElsewhereAtOnce) {
  kafka_.leaders["t"] = std::vector<bool>(6, true);
  kafka_.client_partitions["t"] = 3;  // the producer's metadata lags
  {
    DrainOptions o;
    o.max_inflight_messages = 1;
    o.retry_backoff_ms = 1000;
    o.retry_backoff_max_ms = 5000;
    StartDrain(o);
  }
  Append("t", 20);
  Run(60);
  EXPECT_EQ(Live("t"), 0u) << drain_->DebugString();
  size_t refused = 0;
  for (const testing::FakeKafka::Produced& p : kafka_.produced) refused += p.partition >= 3;
  EXPECT_LE(refused, 3u);  // each unknown partition once
  for (const testing::FakeKafka::Produced& p : kafka_.delivered) EXPECT_LT(p.partition, 3);
}

// After an unkeyed entry was refused for a partition the producer does not know yet, that
// partition's keyed lane waits too until the refusal's retry is due (LaneWait::kClientLags,
// one answer for reading and producing): sent, each of its entries would be refused again
// at every retry of its own shorter backoff.
TEST_F(DrainParked, AKeyedLaneWaitsOutItsPartitionsRefusalByTheProducer) {
  kafka_.leaders["t"] = std::vector<bool>(6, true);
  kafka_.client_partitions["t"] = 3;  // the producer's metadata lags
  {
    DrainOptions o;
    o.retry_backoff_ms = 10;
    o.retry_backoff_max_ms = 3000;
    StartDrain(o);
  }
  // The topic's keys are routed by 6 partitions, and its state stays while this entry
  // waits in the client (an idle topic's state, its lags with it, is dropped).
  kafka_.hold.insert(wal_->GetStats().next_seq);
  Append("t", 1, KeysFor(0, 6, 1));
  Run(5);
  for (int i = 0; i < 12; ++i) {  // unkeyed, one at a time: they go round the partitions
    Append("t", 1);
    Run(2);
  }
  Run(10);
  ASSERT_EQ(Live("t"), 1u) << drain_->DebugString();
  auto refused_at_4 = [&] {
    size_t n = 0;
    for (const testing::FakeKafka::Produced& p : kafka_.produced) n += p.partition == 4;
    return n;
  };
  const size_t refused = refused_at_4();
  ASSERT_GE(refused, 1u) << "the unkeyed entries never tried partition 4";
  Append("t", 3, KeysFor(4, 6, 3));
  Run(100);  // 1 s, within the refusal's retry
  EXPECT_EQ(refused_at_4(), refused) << "the keyed lane was sent to a partition refused\n"
                                     << drain_->DebugString();
  EXPECT_NE(drain_->DebugString().find("p4 3+0 client lags"), std::string::npos)
      << drain_->DebugString();

  kafka_.client_partitions.erase("t");  // the producer learns of partitions 3 to 5
  kafka_.hold.clear();
  Run(300);
  EXPECT_EQ(kafka_.DeliveredSeqs("t", 4).size(), 3u) << drain_->DebugString();
  EXPECT_EQ(Live("t"), 0u);
}

}  // namespace
}  // namespace kspool::agent
