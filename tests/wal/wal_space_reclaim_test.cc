// Freeing space by draining on a volume the WAL itself filled. Settled entries go from
// the disk only when the dead range is compacted (WalMaintenance, while the reserve is
// missing). When one compaction fails for space, RocksDB 7.8.3 holds a soft background
// error and refuses every later compaction (Status::CompactionTooLarge) until the volume
// has that compaction's input, and its write buffer, free (SstFileManager): on a volume
// the WAL filled that never comes, and what the drain settles is never freed. The WAL
// treats such a failure as one that needs a reopen, as the drain does after a failed
// write: the reopened database has no such state and compacts the dead range away.
// Here over the fault-injecting file system, which also shows RocksDB a full volume.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

class WalSpaceReclaim : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  // Appends `n` entries of 4 KB that do not compress and closes the WAL: the next open
  // replays them from RocksDB's log and flushes them into a table file of their own.
  void AppendAndClose(int n) {
    auto wal = OpenWal();
    AppendBatch b;
    for (int i = 0; i < n; ++i) {
      std::string value(4096, '\0');
      for (char& c : value) c = static_cast<char>(rng_());
      RecordView v;
      v.topic = "a";
      v.value = value;
      b.Add(v);
    }
    ASSERT_TRUE(wal->Append(std::move(b)).ok());
  }

  // What the drain does with a WAL that needs a reopen.
  static void ReopenIfFailed(Wal* wal) {
    if (!wal->health().ok()) {
      ASSERT_TRUE(wal->Reopen().ok()) << wal->health();
    }
  }

  uint64_t TableBytes() const { return kspool::testing::TableBytes(dir_.path()); }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::mt19937 rng_{7};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalSpaceReclaim, AfterACompactionFailedForSpaceDrainingStillFreesTheDeadRange) {
  AppendAndClose(100);
  AppendAndClose(100);  // two table files of 100 entries (400 KB each)
  auto wal = OpenWal();
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 200u);
  clock_.Advance(2000);
  ASSERT_TRUE(wal->Settle(Delivered({e.begin(), e.begin() + 150})).ok());
  wal = nullptr;
  wal = OpenWal();  // the settle's tombstones into a table file of their own
  const uint64_t full = TableBytes();
  ASSERT_GT(full, 700u << 10);

  // The volume is full: compacting what is settled so far rewrites the live rest of the
  // second table file, and fails for space.
  fs_->SetFreeSpace(0);
  fs_->SetNoSpace(true);
  EXPECT_FALSE(wal->CompactDeadRange().ok());
  fs_->SetNoSpace(false);
  ReopenIfFailed(wal.get());

  // The rest is delivered: everything is dead, and compacting it writes nothing.
  std::vector<Entry> rest = ScanAll(wal.get());
  ASSERT_EQ(rest.size(), 50u);
  ASSERT_TRUE(wal->Settle(Delivered(rest)).ok());
  // WalMaintenance compacts the dead range again every second while the reserve is
  // missing, after the drain's reopen if it failed: a few rounds, as a background
  // compaction started by the reopen may hold the files the first round needs.
  absl::Status compacted;
  for (int round = 0; round < 10; ++round) {
    ReopenIfFailed(wal.get());
    compacted = wal->CompactDeadRange();
    if (compacted.ok() && TableBytes() < (100u << 10)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(compacted.ok()) << compacted;
  EXPECT_LT(TableBytes(), 100u << 10) << "of " << full << " bytes in table files before";
  EXPECT_TRUE(ScanAll(wal.get()).empty());
  ExpectLedgerHolds(wal.get(), "after the compaction");
}

}  // namespace
}  // namespace kspool::wal
