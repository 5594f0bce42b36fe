// The WAL under faults: capacity limits, failed syncs, a full disk, dead letters.
#include <gtest/gtest.h>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

class WalFault : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal(uint64_t max_bytes = 0) {
    Options o;
    o.dir = dir_.path();
    o.env = kspool::testing::EnvFor(fs_);
    o.max_bytes = max_bytes;
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(wal).value();
  }
  kspool::testing::TempDir dir_;
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalFault, FullWalIsResourceExhaustedAndWritesNothingOfTheRequest) {
  AppendBatch probe = MakeBatch("t", 1, "0123456789");
  const uint64_t one = probe.bytes();
  auto wal = OpenWal(one * 10);
  ASSERT_TRUE(wal->Append(MakeBatch("t", 8, "0123456789")).ok());
  auto r = wal->Append(MakeBatch("t", 3, "0123456789"));  // 11 > 10: rejected whole
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_NE(r.status().message().find("WAL full"), std::string::npos);
  EXPECT_EQ(ScanAll(wal.get()).size(), 8u);
  EXPECT_EQ(wal->GetStats().topics["t"].accepted.count, 8u);
  ASSERT_TRUE(wal->Append(MakeBatch("t", 2, "0123456789")).ok());  // exactly full
  // Draining makes room again.
  std::vector<Entry> e = ScanAll(wal.get());
  e.resize(3);
  ASSERT_TRUE(wal->Settle(Delivered(e)).ok());
  EXPECT_TRUE(wal->Append(MakeBatch("t", 3, "0123456789")).ok());
  EXPECT_EQ(wal->GetStats().capacity_bytes, one * 10);
}

TEST_F(WalFault, FailedSyncIsStickyUntilReopenThenAcceptsAgain) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("a", 1, "ok")).ok());
  fs_->FailNextSyncs(1);
  EXPECT_EQ(wal->Append(MakeBatch("a", 1, "lost")).status().code(),
            absl::StatusCode::kUnavailable);
  // The disk works again, but the state after a failed sync is unknown.
  EXPECT_EQ(wal->Append(MakeBatch("a", 1, "after")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(wal->health().ok());
  const uint64_t reopens = wal->reopens();
  ASSERT_TRUE(wal->Reopen().ok());
  EXPECT_EQ(wal->reopens(), reopens + 1);
  EXPECT_TRUE(wal->health().ok());
  auto again = wal->Append(MakeBatch("a", 1, "again"));
  ASSERT_TRUE(again.ok()) << again.status();
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_GE(e.size(), 2u);
  EXPECT_EQ(e.front().record.value, "ok0");
  EXPECT_EQ(e.back().record.value, "again0");
  EXPECT_EQ(e.back().seq, again->first_seq);
  EXPECT_GT(again->first_seq, 2u) << "the failed append's sequence number is not reused";
}

TEST_F(WalFault, FullDiskIsUnavailableAndRecoversOnceSpaceReturns) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("a", 2, "before")).ok());
  fs_->FailNextAppends(1000000, /*no_space=*/true);
  absl::Status s = wal->Append(MakeBatch("a", 1, "nospace")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_FALSE(wal->Reopen().ok()) << "cannot recover while the disk is still full";
  EXPECT_EQ(wal->Append(MakeBatch("a", 1, "still")).status().code(),
            absl::StatusCode::kUnavailable);
  // Readers keep working from what is durable... once reopened. Space returns:
  fs_->FailNextAppends(0, true);
  ASSERT_TRUE(wal->Reopen().ok());
  ASSERT_TRUE(wal->Append(MakeBatch("a", 1, "after")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].record.value, "before0");
  EXPECT_EQ(e[2].record.value, "after0");
}

TEST_F(WalFault, DiscardMovesTheEntryToDeadLettersWithItsReason) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("t", 2, "v")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  Outcome o{e[0].seq, "t", e[0].size, "msg_size_too_large", "Broker: Message size too large",
            EncodeRecord(e[0].record)};
  ASSERT_TRUE(wal->Settle({o}).ok());
  std::vector<DeadLetter> dead;
  ASSERT_TRUE(wal->ScanDeadLetters(0, 100, &dead).ok());
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].seq, e[0].seq);
  EXPECT_EQ(dead[0].reason, "msg_size_too_large");
  EXPECT_EQ(dead[0].error_text, "Broker: Message size too large");
  EXPECT_EQ(DecodeRecord(dead[0].raw)->value, "v0");
  Stats s = wal->GetStats();
  EXPECT_EQ(s.topics["t"].discarded["msg_size_too_large"].count, 1u);
  std::map<std::string, Counts> live;
  ASSERT_TRUE(wal->CountLive(&live).ok());
  EXPECT_EQ(live["t"].count, 1u);
  EXPECT_EQ(s.topics["t"].pending().count, live["t"].count);
}

TEST_F(WalFault, FsyncsCountsEverySyncedWriteAndMatchesTheFileSystem) {
  auto wal = OpenWal();
  auto fsyncs = [&] { return wal->GetStats().fsyncs; };
  const uint64_t syncs = fs_->wal_syncs(), opened = fsyncs();
  EXPECT_GE(opened, 1u) << "Open writes the format version and agent id, synced";
  ASSERT_TRUE(wal->Append(MakeBatch("t", 3, "v")).ok());
  EXPECT_EQ(fsyncs(), opened + 1);
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_TRUE(wal->Settle(Delivered({e[0]})).ok());
  EXPECT_EQ(fsyncs(), opened + 2) << "a settle";
  ASSERT_TRUE(wal->SaveCommitPoints({e[1].record.receive_time_ms - 1, {}}).ok());
  EXPECT_EQ(fsyncs(), opened + 3) << "a commit point of a WAL with live entries";
  ASSERT_TRUE(wal->Settle({{e[1].seq, "t", e[1].size, "expired", "", EncodeRecord(e[1].record), 0}}).ok());
  ASSERT_TRUE(wal->PurgeDeadLetters({e[1].seq}).ok());
  EXPECT_EQ(fsyncs(), opened + 5) << "a discard and a dead-letter purge";
  EXPECT_EQ(wal->GetStats().group_commits, 1u);
  EXPECT_EQ(fs_->wal_syncs() - syncs, fsyncs() - opened) << "each is one sync of RocksDB's log";
}

}  // namespace
}  // namespace kspool::wal
