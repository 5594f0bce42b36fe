// The WAL when a compaction's output file cannot be made durable (EIO, a full disk).
//
// RocksDB 7.8.3 (built with assertions) aborts in ExtractUserKey when a compaction that
// holds range tombstones and drops every point key fails to sync the output file it
// opened for the range tombstones alone: at the bottom level those are dropped too, the
// file is empty, and the job's statistics read its empty smallest key. These tests run
// that scenario on a real WAL directory over the fault-injecting file system.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
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

  // Appends `n` entries and closes the WAL: the next open replays them from RocksDB's
  // log and flushes them into a table file of their own.
  void AppendAndClose(int n) {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", n, "v")).ok());
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

// Today's behaviour, kept only until the fix: the process aborts inside RocksDB.
TEST_F(WalCompactionFault, CompactingAFullySettledLogWhileTableSyncsFailAbortsInsideRocksDb) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        AppendAndClose(100);
        auto wal = OpenWal();
        std::vector<Entry> e = ScanAll(wal.get());
        clock_.Advance(2000);
        if (!wal->Settle(Delivered(e)).ok()) return;
        fs_->FailTableSyncs(/*skip=*/1, /*n=*/1);
        (void)wal->CompactDeadRange();
      },
      "ExtractUserKey.*Assertion .internal_key.size\\(\\) >= kNumInternalBytes. failed");
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

}  // namespace
}  // namespace kspool::wal
