// The delivery index's retention while an entry is stuck (its partition without a
// leader): the feed stops at the oldest live entry, so TrimDeliveries() must not forget
// by age what lies above it — a follower from any position at or above the floor would
// be cut off, and the outcomes of healthy topics hidden. Retention counts from when an
// outcome is released (it and every one below it known); only the byte bound may pass
// the head, and a follower it passes is told the exact range it missed.
#include <gtest/gtest.h>

#include "tests/wal/delivery_test_util.h"

namespace kspool::wal {
namespace {


class WalDeliveryHeldBack : public DeliveryTest {
 protected:
  // e[0] stays live (stuck); e[1..] are delivered now, one run each (two partitions).
  std::vector<Entry> StuckFirst(Wal* wal, int n) {
    std::vector<Entry> e = Append(wal, n);
    std::vector<Outcome> o = Deliver({e.begin() + 1, e.end()}, 0, 0);
    for (size_t i = 0; i < o.size(); ++i) o[i].partition = static_cast<int32_t>(i % 2);
    EXPECT_TRUE(wal->Settle(o).ok());
    return e;
  }
  static absl::Status ScanOnce(Wal* wal, uint64_t from, std::vector<Outcome>* out,
                               uint64_t* next) {
    return wal->ScanDeliveries(from, 100, out, next);
  }
};

TEST_F(WalDeliveryHeldBack, AgeDoesNotForgetOutcomesAboveAStuckEntry) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_ms = kHour; });
  std::vector<Entry> e = StuckFirst(wal.get(), 31);
  const uint64_t floor = wal->GetStats().delivery_floor_seq;
  clock_.Advance(3 * kHour);  // three retentions past their settle time
  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 0u) << "no follower from the stuck entry has had them";
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, floor);
  EXPECT_LE(wal->GetStats().delivery_floor_seq, e[0].seq);
  for (size_t i = 1; i < e.size(); ++i) {
    EXPECT_EQ(Lookup(wal.get(), e[i].seq).state, State::kDelivered) << i;
  }
  // A follower from the stuck entry, and one from the floor, wait; neither is refused.
  for (uint64_t from : {e[0].seq, floor}) {
    std::vector<Outcome> out;
    uint64_t next = 0;
    absl::Status s = ScanOnce(wal.get(), from, &out, &next);
    EXPECT_TRUE(s.ok()) << from << ": " << s;
    EXPECT_TRUE(out.empty());
  }
}

TEST_F(WalDeliveryHeldBack, OnceTheStuckEntrySettlesWhatWaitedAboveIsKeptForTheRetentionFromThen) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_ms = kHour; });
  std::vector<Entry> e = StuckFirst(wal.get(), 6);
  clock_.Advance(2 * kHour);
  ASSERT_EQ(wal->TrimDeliveries()->messages, 0u) << "the maintenance trims while it waits";
  ASSERT_TRUE(wal->Settle(Deliver({e[0]}, 1, 100)).ok());  // its leader is back
  ASSERT_EQ(wal->TrimDeliveries()->messages, 0u);
  std::vector<Outcome> all = ScanFeed(wal.get(), e[0].seq, 100);
  ASSERT_EQ(all.size(), e.size()) << "the stuck one's, then every outcome that waited";
  for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(all[i].seq, e[i].seq);
  clock_.Advance(kHour - 1);
  EXPECT_EQ(wal->TrimDeliveries()->messages, 0u) << "released an hour ago less 1 ms";
  clock_.Advance(1);
  EXPECT_EQ(wal->TrimDeliveries()->messages, e.size());
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, e.back().seq + 1);
}

TEST_F(WalDeliveryHeldBack, OutcomesBelowAStuckEntryAgeByTheirOwnTime) {
  auto wal = OpenWal([](Options* o) { o->delivery_retention_ms = kHour; });
  std::vector<Entry> e = Append(wal.get(), 4);
  ASSERT_TRUE(wal->Settle(Deliver({e[0], e[1]}, 0, 0)).ok());
  ASSERT_TRUE(wal->Settle(Deliver({e[3]}, 1, 0)).ok());  // e[2] is stuck
  clock_.Advance(kHour);
  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 2u);
  EXPECT_EQ(wal->GetStats().delivery_floor_seq, e[2].seq) << "up to the stuck entry, not past";
  EXPECT_EQ(Lookup(wal.get(), e[1].seq).state, State::kUnknown);
  EXPECT_EQ(Lookup(wal.get(), e[2].seq).state, State::kPending);
  EXPECT_EQ(Lookup(wal.get(), e[3].seq).state, State::kDelivered);
}

TEST_F(WalDeliveryHeldBack, TheByteBoundStillHoldsAndAFollowerItPassesIsToldTheRange) {
  std::vector<Entry> e;
  uint64_t per_run = 0;
  {
    auto wal = OpenWal();
    e = StuckFirst(wal.get(), 7);
    per_run = wal->GetStats().delivery_index.bytes / 6;
  }
  auto wal = OpenWal([&](Options* o) {
    o->delivery_retention_ms = kHour;
    o->delivery_retention_bytes = 2 * per_run;
  });
  absl::StatusOr<DeliveryTrim> trim = wal->TrimDeliveries();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->messages, 4u);
  EXPECT_LE(wal->GetStats().delivery_index.bytes, 2 * per_run);
  const uint64_t floor = wal->GetStats().delivery_floor_seq;
  ASSERT_EQ(floor, e[5].seq) << "past the stuck entry: the bytes are bounded";
  std::vector<Outcome> out;
  uint64_t next = 0;
  absl::Status s = ScanOnce(wal.get(), e[0].seq, &out, &next);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_EQ(s.message(), "the outcomes of sequence numbers " + std::to_string(e[0].seq) + ".." +
                             std::to_string(floor - 1) +
                             " are no longer kept (the delivery index starts at " +
                             std::to_string(floor) + ")");
  EXPECT_EQ(next, floor) << "where to go on from";
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(ScanOnce(wal.get(), next, &out, &next).ok());
}

}  // namespace
}  // namespace kspool::wal
