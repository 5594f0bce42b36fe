// The delivery index: what became of a sequence number after its entry was settled
// (LookupDeliveries), and the feed of outcomes in sequence order (ScanDeliveries).
#include <gtest/gtest.h>

#include "tests/wal/delivery_test_util.h"

namespace kspool::wal {
namespace {

using WalDelivery = DeliveryTest;

TEST_F(WalDelivery, DeliveredOutcomeIsFoundWithItsPartitionAndOffset) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 3, "orders");
  ASSERT_TRUE(wal->Settle(Deliver(e, 2, 100)).ok());
  Outcome d = Lookup(wal.get(), e[1].seq);
  EXPECT_EQ(d.seq, e[1].seq);
  EXPECT_EQ(d.state, State::kDelivered);
  EXPECT_EQ(d.topic, "orders");
  EXPECT_EQ(d.partition, 2);
  EXPECT_EQ(d.offset, 101);
  EXPECT_EQ(d.time_ms, kStart) << "an outcome without a time gets the settle's";
  EXPECT_TRUE(d.discard_reason.empty());
  EXPECT_EQ(Lookup(wal.get(), e[2].seq).offset, 102);
}

TEST_F(WalDelivery, OutcomeKeepsTheTimeTheDrainGaveIt) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 1);
  ASSERT_TRUE(wal->Settle(Deliver(e, 0, 7, kStart - 5000)).ok());
  EXPECT_EQ(Lookup(wal.get(), e[0].seq).time_ms, kStart - 5000);
}

TEST_F(WalDelivery, LiveEntryIsPending) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 2);
  ASSERT_TRUE(wal->Settle(Deliver({e[1]}, 0, 5)).ok());
  Outcome d = Lookup(wal.get(), e[0].seq);
  EXPECT_EQ(d.state, State::kPending);
  EXPECT_EQ(d.seq, e[0].seq);
  EXPECT_EQ(d.topic, "t") << "its record's topic, for the caller's access check";
  EXPECT_EQ(Lookup(wal.get(), e[1].seq).state, State::kDelivered) << "settled above the head";
}

TEST_F(WalDelivery, DiscardedOutcomeKeepsItsReasonAndError) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 2, "orders");
  ASSERT_TRUE(wal->Settle({Discard(e[0], "msg_size_too_large", "Broker: Message size too large"),
                           Discard(e[1], "msg_size_too_large", "Broker: Message size too large")})
                  .ok());
  for (const Entry& x : e) {
    Outcome d = Lookup(wal.get(), x.seq);
    EXPECT_EQ(d.state, State::kDiscarded);
    EXPECT_EQ(d.topic, "orders");
    EXPECT_EQ(d.discard_reason, "msg_size_too_large");
    EXPECT_EQ(d.error, "Broker: Message size too large");
    EXPECT_EQ(d.offset, -1);
  }
  EXPECT_EQ(wal->GetStats().delivery_index.count, 2u);
}

TEST_F(WalDelivery, UnknownSaysWhy) {
  auto wal = OpenWal();
  std::vector<Entry> before = Append(wal.get(), 2);
  fs_->FailNextAppends(1, /*no_space=*/false);  // its sequence number is never an entry
  ASSERT_FALSE(wal->Append(MakeBatch("t", 1, "lost")).ok());
  ASSERT_TRUE(wal->Reopen().ok());
  std::vector<Entry> after = Append(wal.get(), 1);
  const uint64_t gap = before[1].seq + 1;
  ASSERT_EQ(after[0].seq, gap + 1) << "the scenario: the failed append left a gap";
  ASSERT_TRUE(wal->Settle(Deliver(before, 0, 0)).ok());
  ASSERT_TRUE(wal->Settle(Deliver(after, 0, 2)).ok());

  std::vector<Outcome> d = Lookup(wal.get(), {gap, after[0].seq + 1, 0});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].state, State::kUnknown);
  EXPECT_EQ(d[0].seq, gap);
  EXPECT_EQ(d[0].error, "no message was accepted with this sequence number");
  EXPECT_EQ(d[1].state, State::kUnknown);
  EXPECT_EQ(d[1].error, "not assigned yet (next: " + std::to_string(after[0].seq + 1) + ")");
  EXPECT_EQ(d[2].state, State::kUnknown);
  EXPECT_EQ(d[2].error, "sequence numbers start at 1");
}

TEST_F(WalDelivery, LookupAnswersInRequestOrderWithRepeats) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 4);
  ASSERT_TRUE(wal->Settle(Deliver({e[0], e[1]}, 1, 10)).ok());
  std::vector<Outcome> d = Lookup(wal.get(), {e[3].seq, e[0].seq, e[3].seq, e[1].seq});
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(Seqs(d), (std::vector<uint64_t>{e[3].seq, e[0].seq, e[3].seq, e[1].seq}));
  EXPECT_EQ(d[0].state, State::kPending);
  EXPECT_EQ(d[1].offset, 10);
  EXPECT_EQ(d[2].state, State::kPending);
  EXPECT_EQ(d[3].offset, 11);
}

TEST_F(WalDelivery, IndexSurvivesReopenAndRestart) {
  std::vector<Entry> e;
  Stats before;
  {
    auto wal = OpenWal();
    e = Append(wal.get(), 3);
    ASSERT_TRUE(wal->Settle(Deliver({e[0], e[1]}, 4, 40)).ok());
    before = wal->GetStats();
  }
  auto wal = OpenWal();
  EXPECT_EQ(wal->GetStats().delivery_index.count, before.delivery_index.count);
  EXPECT_EQ(wal->GetStats().delivery_index.bytes, before.delivery_index.bytes);
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, before.delivery_floor_seq);
  EXPECT_EQ(Lookup(wal.get(), e[1].seq).offset, 41);
  EXPECT_EQ(Lookup(wal.get(), e[2].seq).state, State::kPending);

  // A reopen after a write error reloads it as well. Exactly this append's sync fails:
  // after the reopen above RocksDB may still be syncing files of its own in the
  // background (seen under ASan), which FailNextSyncs(1) would have failed instead.
  fs_->FailSyncOfWrite("reload-after-error-reload-after-error-");
  ASSERT_FALSE(wal->Append(MakeBatch("t", 1, "reload-after-error-reload-after-error-")).ok());
  ASSERT_TRUE(wal->Reopen().ok());
  EXPECT_EQ(Lookup(wal.get(), e[0].seq).offset, 40);
  ASSERT_TRUE(wal->Settle(Deliver({e[2]}, 4, 42)).ok());
  EXPECT_EQ(Lookup(wal.get(), e[2].seq).offset, 42);
  EXPECT_EQ(wal->GetStats().delivery_index.count, 3u);
}

TEST_F(WalDelivery, RunsCompressConsecutiveDeliveries) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 10'000);
  ASSERT_EQ(e.size(), 10'000u);
  for (size_t at = 0; at < e.size(); at += 2500) {  // four settles: four runs
    std::vector<Entry> part(e.begin() + at, e.begin() + at + 2500);
    ASSERT_TRUE(wal->Settle(Deliver(part, 3, 1'000'000 + static_cast<int64_t>(at))).ok());
  }
  const Counts index = wal->GetStats().delivery_index;
  EXPECT_EQ(index.count, 10'000u);
  EXPECT_LT(index.bytes, 200u) << "one key per message would take 80,000 bytes of keys alone";
  EXPECT_EQ(Lookup(wal.get(), e[7'777].seq).offset, 1'007'777);
}

TEST_F(WalDelivery, RunsBreakWhereTheOutcomeChanges) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 6);
  std::vector<Outcome> o = Deliver(e, 0, 10);  // offsets 10..15 in partition 0, but:
  o[2].partition = 1;                          // seq 3 went elsewhere,
  o[4].offset = 99;                            // seq 5's offset jumps,
  o[5] = Discard(e[5], "expired", "too old");  // seq 6 was discarded
  ASSERT_TRUE(wal->Settle({o[5], o[3], o[0], o[4], o[1], o[2]}).ok()) << "in any order";
  auto run = [](const Outcome& first, uint64_t count) {
    DeliveryRun r = DeliveryRun::Of(first, kStart);
    r.count = count;
    return r;
  };
  EXPECT_EQ(wal->GetStats().delivery_index.bytes,
            StoredBytes({run(o[0], 2), run(o[2], 1), run(o[3], 1), run(o[4], 1), run(o[5], 1)}));
  std::vector<Outcome> d = Lookup(wal.get(), Seqs(ScanFeed(wal.get(), 1, 100)));
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d[1].offset, 11);
  EXPECT_EQ(d[2].partition, 1);
  EXPECT_EQ(d[3].offset, 13);
  EXPECT_EQ(d[4].offset, 99);
  EXPECT_EQ(d[5].state, State::kDiscarded);
}

TEST_F(WalDelivery, ScanDeliveriesStopsAtTheHead) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 5);
  ASSERT_TRUE(wal->Settle(Deliver({e[0], e[1], e[3], e[4]}, 0, 0)).ok());
  uint64_t next = 0;
  std::vector<Outcome> d = ScanFeed(wal.get(), 1, 100, &next);
  EXPECT_EQ(Seqs(d), (std::vector<uint64_t>{e[0].seq, e[1].seq}))
      << "an unsettled entry holds back every later outcome";
  EXPECT_EQ(next, e[2].seq);
  ASSERT_TRUE(wal->Settle(Deliver({e[2]}, 0, 2)).ok());
  d = ScanFeed(wal.get(), next, 100, &next);
  EXPECT_EQ(Seqs(d), (std::vector<uint64_t>{e[2].seq, e[3].seq, e[4].seq}));
  EXPECT_EQ(next, e[4].seq + 1);
}

TEST_F(WalDelivery, ScanDeliveriesSkipsGaps) {
  auto wal = OpenWal();
  std::vector<Entry> a = Append(wal.get(), 2);
  fs_->FailNextAppends(1, /*no_space=*/false);
  ASSERT_FALSE(wal->Append(MakeBatch("t", 3, "lost")).ok());
  ASSERT_TRUE(wal->Reopen().ok());
  std::vector<Entry> b = Append(wal.get(), 2);
  ASSERT_EQ(b[0].seq, a[1].seq + 4) << "the scenario: three numbers never held an entry";
  ASSERT_TRUE(wal->Settle(Deliver(a, 0, 0)).ok());
  ASSERT_TRUE(wal->Settle(Deliver(b, 0, 2)).ok());
  uint64_t next = 0;
  std::vector<Outcome> d = ScanFeed(wal.get(), 1, 100, &next);
  EXPECT_EQ(Seqs(d), (std::vector<uint64_t>{a[0].seq, a[1].seq, b[0].seq, b[1].seq}));
  EXPECT_EQ(next, b[1].seq + 1);
}

TEST_F(WalDelivery, ScanDeliveriesResumesInsideARun) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 10);
  ASSERT_TRUE(wal->Settle(Deliver(e, 5, 50)).ok());  // one run
  std::vector<Outcome> out;
  uint64_t next = 0;
  ASSERT_TRUE(wal->ScanDeliveries(e[2].seq, 3, &out, &next).ok());
  EXPECT_EQ(Seqs(out), (std::vector<uint64_t>{e[2].seq, e[3].seq, e[4].seq}));
  EXPECT_EQ(out[0].offset, 52);
  EXPECT_EQ(next, e[5].seq);
  std::vector<Outcome> rest = ScanFeed(wal.get(), next, 4, &next);
  ASSERT_EQ(rest.size(), 5u);
  EXPECT_EQ(rest.back().offset, 59);
  EXPECT_EQ(next, e[9].seq + 1);
}

TEST_F(WalDelivery, ScanBelowTheFloorIsOutOfRange) {
  std::vector<Entry> e;
  {
    auto wal = OpenWal();
    e = Append(wal.get(), 3);
    ASSERT_TRUE(wal->Settle(Deliver(e, 0, 0)).ok());
  }
  auto wal = OpenWal([](Options* o) { o->delivery_retention_bytes = 1; });
  ASSERT_TRUE(wal->TrimDeliveries().ok());
  const uint64_t floor = wal->GetStats().delivery_floor_seq;
  ASSERT_EQ(floor, e[2].seq + 1);
  std::vector<Outcome> out;
  uint64_t next = 0;
  absl::Status s = wal->ScanDeliveries(e[1].seq, 10, &out, &next);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_NE(s.message().find(std::to_string(e[1].seq)), std::string::npos) << s;
  EXPECT_NE(s.message().find(std::to_string(floor)), std::string::npos) << s;
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(wal->ScanDeliveries(floor, 10, &out, &next).ok());
  EXPECT_EQ(next, floor);
}

}  // namespace
}  // namespace kspool::wal
