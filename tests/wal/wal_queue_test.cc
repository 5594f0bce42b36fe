// The RocksDB-as-a-queue trap: deleting from the head leaves tombstones that every
// later scan from the head must skip. These tests count the internal keys a scan
// skips (RocksDB's perf context), which is deterministic, instead of timing it.
#include <gtest/gtest.h>

#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

uint64_t SkippedByHeadScan(Wal* wal) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  std::vector<Entry> out;
  EXPECT_TRUE(wal->Scan(0, 100, 1 << 20, &out).ok());
  const auto* pc = rocksdb::get_perf_context();
  uint64_t skipped = pc->internal_delete_skipped_count + pc->internal_key_skipped_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  return skipped;
}

TEST(WalQueue, SettlingALongPrefixKeepsHeadScanFlat) {
  kspool::testing::TempDir dir;
  Options o;
  o.dir = dir.path();
  auto wal = std::move(Wal::Open(o)).value();
  constexpr int kRounds = 100, kPerRound = 2000;
  uint64_t first_cost = 0, max_cost = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kPerRound / 500; ++i) ASSERT_TRUE(wal->Append(MakeBatch("q", 500, "v")).ok());
    std::vector<Entry> head;
    ASSERT_TRUE(wal->Scan(0, kPerRound, 1 << 30, &head).ok());
    ASSERT_EQ(head.size(), static_cast<size_t>(kPerRound));
    // Settle in slices, some out of order, as delivery reports arrive.
    std::vector<Entry> second(head.begin() + kPerRound / 2, head.end());
    head.resize(kPerRound / 2);
    ASSERT_TRUE(wal->Settle(Delivered(second)).ok());
    ASSERT_TRUE(wal->Settle(Delivered(head)).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("q", 1, "tail")).ok());
    uint64_t cost = SkippedByHeadScan(wal.get());
    if (round == 0) first_cost = cost;
    max_cost = std::max(max_cost, cost);
    // The one live entry stays at the head of every scan.
    std::vector<Entry> live;
    ASSERT_TRUE(wal->Scan(0, 10, 1 << 20, &live).ok());
    ASSERT_EQ(live.size(), 1u);
    ASSERT_TRUE(wal->Settle(Delivered(live)).ok());
  }
  std::printf("settled %d entries; head scan skipped %llu keys at first, at most %llu\n",
              kRounds * (kPerRound + 1), (unsigned long long)first_cost,
              (unsigned long long)max_cost);
  // Settles delete key by key: without the scan's lower bound at the head, the last
  // scan would skip ~200,000 tombstones.
  EXPECT_LE(max_cost, 100u + first_cost);
  EXPECT_EQ(wal->GetStats().entries, 0u);
}

// The dead letters and the delivery index are trimmed from their oldest keys, one point
// tombstone each: each trim starts where the last one ended instead of stepping over
// the tombstones of every earlier trim that compaction has not yet removed.
TEST(WalQueue, TrimsDoNotStepOverTheTombstonesOfEarlierTrims) {
  kspool::testing::TempDir dir;
  Options o;
  o.dir = dir.path();
  o.max_dead_letter_bytes = 1;     // every trim removes every dead letter
  o.delivery_retention_bytes = 1;  // and every run of the delivery index
  auto wal = std::move(Wal::Open(o)).value();
  constexpr int kRounds = 20, kPerRound = 200;
  uint64_t first_cost = 0, max_cost = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Alternating topics and outcomes: one dead letter and one delivery run per pair.
    AppendBatch b;
    for (int i = 0; i < kPerRound; ++i) {
      RecordView v;
      v.topic = i % 2 ? "a" : "b";
      v.value = "v";
      b.Add(v);
    }
    ASSERT_TRUE(wal->Append(b).ok());
    std::vector<Entry> e;
    ASSERT_TRUE(wal->Scan(0, kPerRound, 1 << 30, &e).ok());
    ASSERT_EQ(e.size(), static_cast<size_t>(kPerRound));
    std::vector<Outcome> outcomes;
    for (size_t i = 0; i < e.size(); ++i) {
      outcomes.push_back(i % 2 ? SettleDiscarded(e[i].seq, e[i].record.topic, e[i].size,
                                                 "permanent_error", "x", e[i].raw)
                               : SettleDelivered(e[i].seq, e[i].record.topic, e[i].size));
    }
    ASSERT_TRUE(wal->Settle(outcomes).ok());
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
    rocksdb::get_perf_context()->Reset();
    auto dead = wal->TrimDeadLetters();
    auto index = wal->TrimDeliveries();
    const auto* pc = rocksdb::get_perf_context();
    const uint64_t cost = pc->internal_delete_skipped_count + pc->internal_key_skipped_count;
    rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
    ASSERT_TRUE(dead.ok()) << dead.status();
    ASSERT_TRUE(index.ok()) << index.status();
    ASSERT_EQ(dead->by_size.count, static_cast<uint64_t>(kPerRound / 2));
    ASSERT_FALSE(dead->more);
    ASSERT_FALSE(index->more);
    if (round == 0) first_cost = cost;
    max_cost = std::max(max_cost, cost);
  }
  std::printf("trimmed %d dead letters and %d runs; the trims skipped %llu keys at first, "
              "at most %llu\n",
              kRounds * kPerRound / 2, kRounds * kPerRound, (unsigned long long)first_cost,
              (unsigned long long)max_cost);
  // Walking from the lowest key, the last trims would skip ~11,700 keys (measured).
  EXPECT_LE(max_cost, 100u + first_cost);
  EXPECT_EQ(wal->GetStats().dead_letters.count, 0u);
}

}  // namespace
}  // namespace kspool::wal
