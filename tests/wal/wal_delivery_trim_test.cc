// The delivery index's bounds: TrimDeliveries() forgets the oldest runs beyond
// Options::delivery_retention_bytes, then those older than delivery_retention_ms, and
// raises the floor past them.
#include <gtest/gtest.h>

#include "tests/support/raw_wal.h"
#include "tests/wal/delivery_test_util.h"

namespace kspool::wal {
namespace {


class WalDeliveryTrim : public DeliveryTest {
 protected:
  // Settles each entry on its own (one run each), `step_ms` apart.
  void SettleOneByOne(Wal* wal, const std::vector<Entry>& e, int64_t step_ms) {
    for (size_t i = 0; i < e.size(); ++i) {
      ASSERT_TRUE(wal->Settle(Deliver({e[i]}, 0, static_cast<int64_t>(i))).ok());
      clock_.Advance(step_ms);
    }
  }
};

TEST_F(WalDeliveryTrim, TrimByBytesRaisesTheFloor) {
  std::vector<Entry> e;
  uint64_t per_run = 0;
  {
    auto wal = OpenWal();
    e = Append(wal.get(), 6);
    SettleOneByOne(wal.get(), e, 0);
    per_run = wal->GetStats().delivery_index.bytes / 6;
    ASSERT_EQ(per_run * 6, wal->GetStats().delivery_index.bytes) << "the runs are alike in size";
  }
  auto wal = OpenWal([&](Options* o) { o->delivery_retention_bytes = 2 * per_run; });
  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 4u);
  EXPECT_EQ(trim->bytes, 4 * per_run);
  EXPECT_FALSE(trim->more);
  Stats s = wal->GetStats();
  EXPECT_EQ(s.delivery_index.count, 2u);
  EXPECT_EQ(s.delivery_index.bytes, 2 * per_run);
  EXPECT_EQ(s.delivery_floor_seq, e[4].seq);
  Outcome gone = Lookup(wal.get(), e[3].seq);
  EXPECT_EQ(gone.state, State::kUnknown);
  EXPECT_EQ(gone.error,
            "older than the delivery index keeps (oldest kept: " + std::to_string(e[4].seq) + ")");
  EXPECT_EQ(Lookup(wal.get(), e[4].seq).state, State::kDelivered);
  EXPECT_EQ(wal->TrimDeliveries()->messages, 0u) << "within the bound now";
}

TEST_F(WalDeliveryTrim, TrimByAgeStopsAtTheFirstYoungerRun) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_ms = kHour; });
  std::vector<Entry> e = Append(wal.get(), 4);
  // At the trim, 2 h from now: e0 is 2 h old, e1 1 h - 1 ms, e2 3 h (but above e1), e3 new.
  ASSERT_TRUE(wal->Settle(Deliver({e[0]}, 0, 0)).ok());
  ASSERT_TRUE(wal->Settle(Deliver({e[1]}, 0, 1, kStart + kHour + 1)).ok());
  ASSERT_TRUE(wal->Settle(Deliver({e[2]}, 0, 2, kStart - kHour)).ok());
  clock_.Advance(2 * kHour);
  ASSERT_TRUE(wal->Settle(Deliver({e[3]}, 0, 3)).ok());
  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 1u);
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, e[1].seq);
  EXPECT_EQ(Lookup(wal.get(), e[2].seq).state, State::kDelivered)
      << "shielded by the younger outcome below it";
  clock_.Advance(1);
  EXPECT_EQ(wal->TrimDeliveries()->messages, 2u) << "a millisecond later, both are old enough";
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, e[3].seq);
}

TEST_F(WalDeliveryTrim, TrimIsBoundedPerCall) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_bytes = 1; });
  constexpr int kRuns = 70'000;
  std::vector<Entry> e = Append(wal.get(), kRuns);
  std::vector<Outcome> o = Deliver(e, 0, 0);
  for (size_t i = 0; i < o.size(); ++i) o[i].partition = static_cast<int32_t>(i % 2);  // no runs
  ASSERT_TRUE(wal->Settle(o).ok());
  absl::StatusOr<DeliveryTrim> first = wal->TrimDeliveries();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->more);
  EXPECT_LT(first->messages, static_cast<uint64_t>(kRuns));
  absl::StatusOr<DeliveryTrim> second = wal->TrimDeliveries();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->more);
  EXPECT_EQ(first->messages + second->messages, static_cast<uint64_t>(kRuns));
  EXPECT_EQ(wal->GetStats().delivery_index.bytes, 0u);
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, e.back().seq + 1);
}

TEST_F(WalDeliveryTrim, LateOutcomeBelowTheFloorIsStillFound) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_bytes = 1; });
  std::vector<Entry> e = Append(wal.get(), 4);
  ASSERT_TRUE(wal->Settle(Deliver({e[1], e[2], e[3]}, 0, 1)).ok());  // e[0] is stuck
  ASSERT_TRUE(wal->TrimDeliveries().ok());
  ASSERT_EQ(wal->GetStats().delivery_floor_seq, e[3].seq + 1) << "the scenario";
  EXPECT_EQ(Lookup(wal.get(), e[0].seq).state, State::kPending) << "live below the floor";
  ASSERT_TRUE(wal->Settle(Deliver({e[0]}, 0, 0)).ok());
  Outcome d = Lookup(wal.get(), e[0].seq);
  EXPECT_EQ(d.state, State::kDelivered);
  EXPECT_EQ(d.offset, 0);
}

TEST_F(WalDeliveryTrim, TrimLostInAPowerCutComesBackWithItsTotals) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_bytes = 1; });
  std::vector<Entry> e = Append(wal.get(), 3);
  ASSERT_TRUE(wal->Settle(Deliver(e, 0, 0)).ok());
  const Stats before = wal->GetStats();
  ASSERT_EQ(wal->TrimDeliveries()->messages, 3u);
  ASSERT_EQ(wal->GetStats().delivery_index.count, 0u);
  fs_->CutPowerWhile([&] { wal.reset(); });  // the trim was not synced

  wal = OpenWal();
  Stats after = wal->GetStats();
  EXPECT_EQ(after.delivery_index.count, before.delivery_index.count);
  EXPECT_EQ(after.delivery_index.bytes, before.delivery_index.bytes);
  EXPECT_EQ(after.delivery_floor_seq, before.delivery_floor_seq);
  EXPECT_EQ(Lookup(wal.get(), e[1].seq).state, State::kDelivered);
}

TEST_F(WalDeliveryTrim, UnreadableRunIsDataLossUntilTrimmedAsTheOldest) {
  std::vector<Entry> e;
  {
    auto wal = OpenWal();
    e = Append(wal.get(), 3);
    ASSERT_TRUE(wal->Settle(Deliver({e[0]}, 0, 0)).ok());
    ASSERT_TRUE(wal->Settle(Deliver({e[1], e[2]}, 0, 1)).ok());
  }
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [&](rocksdb::DB* db, auto& cf) {
                std::string key(8, '\0');
                key[7] = static_cast<char>(e[0].seq);
                return db->Put(rocksdb::WriteOptions(), cf.at("delivery"), key, "\x01\x05");
              }).ok());
  auto wal = OpenWal([](Options* o) { o->delivery_retention_ms = kHour; });
  std::vector<Outcome> out;
  EXPECT_EQ(wal->LookupDeliveries({e[0].seq}, &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(out.empty()) << "nothing is appended when a lookup fails";
  uint64_t next = 0;
  EXPECT_EQ(wal->ScanDeliveries(e[0].seq, 10, &out, &next).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Lookup(wal.get(), e[2].seq).offset, 2) << "other runs still read";

  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();  // the others are young
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 0u) << "how many it held is not known";
  EXPECT_EQ(trim->bytes, 10u);
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, e[1].seq);
  EXPECT_EQ(Seqs(ScanFeed(wal.get(), e[1].seq, 10)), (std::vector<uint64_t>{e[1].seq, e[2].seq}));
}

TEST_F(WalDeliveryTrim, WithoutLimitsNothingIsTrimmed) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 2);
  ASSERT_TRUE(wal->Settle(Deliver(e, 0, 0, kStart - 100 * kHour)).ok());
  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 0u);
  EXPECT_EQ(wal->GetStats().delivery_index.count, 2u);
}

}  // namespace
}  // namespace kspool::wal
