// The WAL when a compaction's output file cannot be made durable (EIO, a full disk).
//
// RocksDB 7.8.3 (built with assertions) aborts in ExtractUserKey when a compaction that
// holds range tombstones and drops every point key fails to sync the output file it
// opened for the range tombstones alone: at the bottom level those are dropped too, the
// file is empty, and the job's statistics read its empty smallest key. These tests run
// that scenario on a real WAL directory over the fault-injecting file system: the WAL
// writes no range tombstone (FORMAT.md, "Deletes"), so it cannot arise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "tests/support/fault_fs.h"
#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/keys.h"
#include "wal/record.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

class WalCompactionFault : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    o.max_dead_letter_bytes = 1;  // every trim removes all of them
    o.delivery_retention_bytes = 1;
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  // Appends `n` entries, one Send each so that each is a log record of its own and a
  // settle leaves tombstones, and closes the WAL: the next open replays them from
  // RocksDB's log and flushes them into a table file of their own.
  void AppendAndClose(int n) {
    auto wal = OpenWal();
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(wal->Append(MakeBatch("a", 1, "v" + std::to_string(i) + "-")).ok());
    }
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalCompactionFault, CompactingAFullySettledLogWhileTableSyncsFailDoesNotAbort) {
  AppendAndClose(100);
  auto wal = OpenWal();
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 100u);
  clock_.Advance(2000);
  ASSERT_TRUE(wal->Settle(Delivered(e)).ok());
  // The flush of the settle passes; the compaction's output file, if it makes one,
  // fails its sync.
  fs_->FailTableSyncs(/*skip=*/1, /*n=*/1);
  absl::Status compacted = wal->CompactDeadRange();
  fs_->FailTableSyncs(0, 0);
  if (!compacted.ok()) {
    EXPECT_EQ(fs_->injected_table_sync_failures(), 1u) << compacted;
    if (!wal->health().ok()) {
      ASSERT_TRUE(wal->Reopen().ok());
    }
  }
  auto more = wal->Append(MakeBatch("a", 3, "after"));
  if (!more.ok()) {  // RocksDB stopped writes after the failed compaction
    ASSERT_TRUE(wal->Reopen().ok());
    more = wal->Append(MakeBatch("a", 3, "after"));
  }
  ASSERT_TRUE(more.ok()) << more.status();
  std::vector<Entry> rest = ScanAll(wal.get());
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[0].record.value, "after0");
  ExpectLedgerHolds(wal.get(), "after the compaction");
}

TEST_F(WalCompactionFault, FailedCompactionOutputIsReportedAndLosesNothingAcknowledged) {
  AppendAndClose(100);
  auto wal = OpenWal();
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 100u);
  clock_.Advance(2000);
  ASSERT_TRUE(wal->Settle(Delivered({e.begin(), e.begin() + 60})).ok());
  fs_->FailTableSyncs(/*skip=*/1, /*n=*/1);  // the 40 live entries' output fails
  absl::Status compacted = wal->CompactDeadRange();
  fs_->FailTableSyncs(0, 0);
  EXPECT_FALSE(compacted.ok());
  EXPECT_EQ(fs_->injected_table_sync_failures(), 1u);
  auto more = wal->Append(MakeBatch("a", 3, "after"));
  if (!more.ok()) {
    ASSERT_TRUE(wal->Reopen().ok());
    more = wal->Append(MakeBatch("a", 3, "after"));
  }
  ASSERT_TRUE(more.ok()) << more.status();
  std::vector<Entry> rest = ScanAll(wal.get());
  ASSERT_EQ(rest.size(), 43u);
  EXPECT_EQ(rest[0].seq, e[60].seq);
  EXPECT_EQ(rest[39].seq, e[99].seq);
  ExpectLedgerHolds(wal.get(), "after the failed compaction");
  // And a compaction that can write its output now succeeds.
  EXPECT_TRUE(wal->CompactDeadRange().ok());
  EXPECT_EQ(ScanAll(wal.get()).size(), 43u);
}

// No column family ever holds a range tombstone, so no compaction can be one of range
// deletions alone: settles (in order, out of order, in long runs), the dead letters'
// trim and the delivery index's trim delete key by key.
TEST_F(WalCompactionFault, SettlesAndTrimsWriteNoRangeTombstones) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 200, "v")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    clock_.Advance(2000);
    // A run of 40 above the head, then the prefix below it, then the rest discarded.
    ASSERT_TRUE(wal->Settle(Delivered({e.begin() + 100, e.begin() + 140})).ok());
    clock_.Advance(2000);
    ASSERT_TRUE(wal->Settle(Delivered({e.begin(), e.begin() + 100})).ok());
    std::vector<Outcome> discards;
    for (size_t i = 140; i < e.size(); ++i) {
      discards.push_back(SettleDiscarded(e[i].seq, "a", e[i].size, "permanent_error", "x",
                                         e[i].raw, e[i].record.receive_time_ms));
    }
    clock_.Advance(2000);
    ASSERT_TRUE(wal->Settle(discards).ok());
    auto dead = wal->TrimDeadLetters();
    ASSERT_TRUE(dead.ok()) << dead.status();
    EXPECT_EQ(dead->by_size.count, 60u);
    auto index = wal->TrimDeliveries();
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_GT(index->messages, 0u);
  }
  uint64_t range_deletions = 0;
  rocksdb::Status s = kspool::testing::WithRawWal(
      dir_.path(), [&](rocksdb::DB* db, kspool::testing::RawHandles& cfs) {
        for (auto& [name, cf] : cfs) {
          rocksdb::Status f = db->Flush(rocksdb::FlushOptions(), cf);
          if (!f.ok()) return f;
          rocksdb::TablePropertiesCollection props;
          f = db->GetPropertiesOfAllTables(cf, &props);
          if (!f.ok()) return f;
          for (auto& [file, p] : props) {
            EXPECT_EQ(p->num_range_deletions, 0u) << name << " " << file;
            range_deletions += p->num_range_deletions;
          }
        }
        return rocksdb::Status::OK();
      });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(range_deletions, 0u);
}

// An older version removed the settled prefix with a range delete that trailed behind
// the head: entries it had not yet removed are deleted (key by key) at the next open.
TEST_F(WalCompactionFault, OpenDeletesEntriesAnOlderVersionLeftBelowTheHead) {
  std::string leftover;
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 10, "v")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    leftover = EncodeRecord(e[2].record);  // a version-1 entry, as the older version wrote
    ASSERT_TRUE(wal->Settle(Delivered({e.begin(), e.begin() + 5})).ok());
  }
  const std::string key3("\0\0\0\0\0\0\0\3", 8);
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [&](rocksdb::DB* db,
                                                           kspool::testing::RawHandles& cf) {
                // An older version's WAL: the entry, and no none_below_head marker.
                rocksdb::Status s = db->Delete(rocksdb::WriteOptions(), cf.at("meta"),
                                               std::string(keys::kNoneBelowHead));
                if (!s.ok()) return s;
                return db->Put(rocksdb::WriteOptions(), cf.at("log"), key3, leftover);
              }).ok());
  {
    auto wal = OpenWal();
    std::vector<Entry> rest = ScanAll(wal.get());
    ASSERT_EQ(rest.size(), 5u);
    EXPECT_EQ(rest[0].seq, 6u);
    ExpectLedgerHolds(wal.get(), "after the open");
  }
  rocksdb::Status found = kspool::testing::WithRawWal(
      dir_.path(), [&](rocksdb::DB* db, kspool::testing::RawHandles& cf) {
        std::string v;
        return db->Get(rocksdb::ReadOptions(), cf.at("log"), key3, &v);
      });
  EXPECT_TRUE(found.IsNotFound()) << found.ToString();
}

}  // namespace
}  // namespace kspool::wal
