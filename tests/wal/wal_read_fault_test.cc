// WAL reads that fail (an I/O error, or a table block that fails its checksum) while the
// WAL looks for its first live entry: the error is never taken for "nothing left". The
// head does not pass entries it could not read, nor does the commit point or an open.
// Faults come from the fault file system (tests/support/fault_fs.h), which fails reads
// of table files by the test's own thread only, so the log is flushed into one first.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/clock.h"
#include "tests/support/fault_fs.h"
#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

constexpr int kStoredEntries = 100;
constexpr int kSettled = 50;  // the first entries settled; the rest stay live

class WalReadFault : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Wal>> Open(const std::string& dir) {
    Options o;
    o.dir = dir;
    o.env = kspool::testing::EnvFor(fs_);
    o.clock = &clock_;
    return Wal::Open(o);
  }
  std::unique_ptr<Wal> OpenWal() {
    absl::StatusOr<std::unique_ptr<Wal>> wal = Open(dir_.path());
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  // kStoredEntries entries of 1000 bytes that do not compress, so that the table file they
  // are flushed into has many blocks: a seek into the middle reads one not read before.
  void Fill(const std::function<void(Wal*, const std::vector<Entry>&)>& then = nullptr) {
    {
      std::unique_ptr<Wal> wal = OpenWal();
      ASSERT_NE(wal, nullptr);
      uint32_t x = 7;
      for (int i = 0; i < kStoredEntries; ++i) {
        std::string value(1000, '\0');
        for (char& c : value) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
        ASSERT_TRUE(wal->Append(MakeBatch("t", 1, value)).ok());
        clock_.Advance(1);  // distinct receive times
      }
      if (then) then(wal.get(), ScanAll(wal.get()));
    }
    ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db,
                                                            kspool::testing::RawHandles& cf) {
                  rocksdb::Status s = db->Flush(rocksdb::FlushOptions(), cf.at("log"));
                  return s.ok() ? db->Flush(rocksdb::FlushOptions(), cf.at("delivery")) : s;
                }).ok());
  }
  // A fresh copy of the (closed) WAL, for a test that fails one read after another.
  void CopyWalTo(const kspool::testing::TempDir& copy) {
    std::filesystem::copy(dir_.path(), copy.path(),
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::overwrite_existing);
  }
  // Every read of a table file by this thread fails from now on, half as I/O errors.
  void FailReads() { fs_->FailReadsOnThisThread(0, 1 << 20, /*corrupt=*/true); }
  void HealReads() { fs_->FailReadsOnThisThread(0, 0, false); }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

// A settle finds the records holding the settled numbers by seeking the log (a batch
// record's key names its last number): a seek that fails fails the whole settle before
// anything is written, and the drain's retry settles exactly what it asked for.
TEST_F(WalReadFault, ASettleWhoseSeekFailsSettlesNothingAndKeepsTheHead) {
  Fill();
  std::unique_ptr<Wal> wal = OpenWal();
  ASSERT_NE(wal, nullptr);
  std::vector<Entry> entries = ScanAll(wal.get());
  ASSERT_EQ(entries.size(), static_cast<size_t>(kStoredEntries));
  std::vector<Entry> settled(entries.begin(), entries.begin() + kSettled);

  const uint64_t faults = fs_->injected_read_faults();
  FailReads();
  absl::Status s = wal->Settle(Delivered(settled));
  HealReads();
  ASSERT_GT(fs_->injected_read_faults(), faults) << "the settle read no table block";
  ASSERT_FALSE(s.ok()) << "a settle that could not find its records reported success";
  EXPECT_NE(s.message().find(dir_.path()), std::string::npos) << s;
  EXPECT_TRUE(wal->health().ok()) << "a failed read is not a failed write: " << wal->health();
  EXPECT_EQ(ScanAll(wal.get()).size(), static_cast<size_t>(kStoredEntries));
  EXPECT_EQ(wal->GetStats().entries, static_cast<uint64_t>(kStoredEntries));
  EXPECT_EQ(wal->GetStats().topics["t"].delivered.count, 0u);

  ASSERT_TRUE(wal->Settle(Delivered(settled)).ok());  // the drain's retry
  std::vector<Entry> left = ScanAll(wal.get());
  ASSERT_EQ(left.size(), static_cast<size_t>(kStoredEntries - kSettled));
  EXPECT_EQ(left.front().seq, entries[kSettled].seq);
  EXPECT_EQ(wal->GetStats().entries, static_cast<uint64_t>(kStoredEntries - kSettled));
  EXPECT_EQ(wal->GetStats().topics["t"].delivered.count, static_cast<uint64_t>(kSettled));
}

TEST_F(WalReadFault, CommitPointDoesNotPassAnEntryItCouldNotRead) {
  Fill();
  std::unique_ptr<Wal> wal = OpenWal();
  ASSERT_NE(wal, nullptr);
  std::vector<Entry> entries = ScanAll(wal.get());
  ASSERT_EQ(entries.size(), static_cast<size_t>(kStoredEntries));
  const Entry& unread = entries[kSettled];  // the drain's cursor is here

  const uint64_t faults = fs_->injected_read_faults();
  FailReads();
  absl::StatusOr<int64_t> bound = wal->ReceiveTimeBound(unread.seq);
  HealReads();
  ASSERT_GT(fs_->injected_read_faults(), faults) << "the bound read no table block";
  ASSERT_FALSE(bound.ok() && *bound > unread.record.receive_time_ms)
      << "bound " << *bound << " is past entry " << unread.seq << ", received at "
      << unread.record.receive_time_ms << ": the commit point would pass it";
  EXPECT_NE(bound.status().message().find(dir_.path()), std::string::npos) << bound.status();

  bound = wal->ReceiveTimeBound(unread.seq);  // the caller asks again once reads work
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_EQ(*bound, unread.record.receive_time_ms);
}

TEST_F(WalReadFault, OpenWithAFailingReadDoesNotSkipEntries) {
  // The head is persisted above entries still stored: settled with a point write of the
  // head, their range deletion left for later (a settle within a second of the last one).
  Fill([&](Wal* wal, const std::vector<Entry>& entries) {
    ASSERT_TRUE(wal->Settle(Delivered({entries.begin(), entries.begin() + 1})).ok());
    ASSERT_TRUE(wal->Settle(Delivered({entries.begin() + 1, entries.begin() + kSettled})).ok());
  });
  // Fail one read of Open after another (each on a fresh copy of the directory): an open
  // may fail, but one that succeeds has every live entry.
  bool failed_one = false;
  int skip = 0;
  for (; skip < 400; ++skip) {
    kspool::testing::TempDir copy;
    CopyWalTo(copy);
    const uint64_t faults = fs_->injected_read_faults();
    fs_->FailReadsOnThisThread(skip, 1, /*corrupt=*/skip % 2 == 1);
    absl::StatusOr<std::unique_ptr<Wal>> wal = Open(copy.path());
    HealReads();
    if (fs_->injected_read_faults() == faults) break;  // Open made fewer reads than skip
    if (!wal.ok()) {
      failed_one = true;
      continue;
    }
    std::vector<Entry> live = ScanAll(wal->get());
    ASSERT_EQ(live.size(), static_cast<size_t>(kStoredEntries - kSettled))
        << "read " << skip << " of Open failed, Open succeeded and skipped entries";
    EXPECT_EQ(live.front().seq, static_cast<uint64_t>(kSettled + 1));
  }
  ASSERT_LT(skip, 400) << "Open did not stop reading";
  EXPECT_TRUE(failed_one) << "no failed read of Open was reported";
}

TEST_F(WalReadFault, ScanDeliveriesWhoseSeekFailsDoesNotSkipOutcomes) {
  Fill([&](Wal* wal, const std::vector<Entry>& entries) {
    ASSERT_TRUE(wal->Settle(Delivered({entries.begin(), entries.begin() + kSettled})).ok());
  });
  std::unique_ptr<Wal> wal = OpenWal();
  ASSERT_NE(wal, nullptr);
  const uint64_t from = kSettled / 2;  // inside the run of outcomes that starts at 1

  const uint64_t faults = fs_->injected_read_faults();
  fs_->FailReadsOnThisThread(0, 1, /*corrupt=*/true);  // the seek for the run holding `from`
  std::vector<Outcome> out;
  uint64_t next = 0;
  absl::Status s = wal->ScanDeliveries(from, kStoredEntries, &out, &next);
  HealReads();
  ASSERT_GT(fs_->injected_read_faults(), faults) << "the scan read no table block";
  // The caller asks again from `from`; an OK answer would have told it that the outcomes
  // it lacks do not exist.
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss)
      << s << ": " << out.size() << " outcomes, next " << next << " (from " << from << ")";
}

// A discard of a record that no longer decodes is charged to the topic whose ledger owns
// it, found by counting the live log. A read that fails during that count fails the
// settle (the drain settles again): it never lets the drain's guess of the topic stand.
// Each read of the settle fails in turn, on a fresh copy of the WAL.
TEST_F(WalReadFault, AReadThatFailsWhileFindingAnUnreadableRecordsOwnerFailsTheSettle) {
  Fill([&](Wal* wal, const std::vector<Entry>&) {
    ASSERT_TRUE(wal->Append(MakeBatch("t", 4, "value-")).ok());  // one record, seqs 101..104
    ASSERT_TRUE(wal->Append(MakeBatch("u", 2, "ok")).ok());
  });
  ASSERT_TRUE(kspool::testing::EditLogEntry(dir_.path(), kStoredEntries + 2, [](std::string* v) {
                v->resize(v->size() - 3);  // its lengths no longer add up: its layout is lost
              }).ok());
  bool failed_one = false;
  int skip = 0;
  for (; skip < 400; ++skip) {
    kspool::testing::TempDir copy;
    CopyWalTo(copy);
    absl::StatusOr<std::unique_ptr<Wal>> opened = Open(copy.path());
    ASSERT_TRUE(opened.ok()) << opened.status();
    Wal* wal = opened->get();
    std::vector<Entry> e = ScanAll(wal);  // as the drain reads them
    ASSERT_EQ(e.size(), static_cast<size_t>(kStoredEntries + 6));
    std::vector<Outcome> outcomes;
    for (int i = kStoredEntries; i < kStoredEntries + 4; ++i) {
      ASSERT_FALSE(e[i].status.ok()) << e[i].seq;
      // The drain's guess is wrong, as when the changed bytes spell another topic.
      outcomes.push_back(
          SettleDiscarded(e[i].seq, "u", e[i].size, "corrupt", e[i].status.ToString(), e[i].raw));
    }
    const uint64_t faults = fs_->injected_read_faults();
    fs_->FailReadsOnThisThread(skip, 1, /*corrupt=*/skip % 2 == 1);
    absl::Status s = wal->Settle(outcomes);
    HealReads();
    if (fs_->injected_read_faults() == faults) break;  // the settle made fewer reads than skip
    if (!s.ok()) {
      failed_one = true;
      ASSERT_TRUE(wal->Settle(outcomes).ok()) << "read " << skip;  // the drain's retry
    }
    Stats st = wal->GetStats();
    EXPECT_EQ(st.topics["t"].discarded["corrupt"].count, 4u) << "read " << skip << ": " << s;
    EXPECT_EQ(st.topics["u"].discarded.count("corrupt"), 0u) << "read " << skip << ": " << s;
    EXPECT_EQ(st.topics["u"].pending().count, 2u) << "read " << skip;
    ExpectLedgerHolds(wal, "read " + std::to_string(skip));
    if (HasFailure()) break;
  }
  ASSERT_LT(skip, 400) << "the settle did not stop reading";
  EXPECT_TRUE(failed_one) << "no failed read of the settle was reported";
}

// RocksDB 7.8.3 lost the error of a table file opened or read as a scan stepped into it
// from the previous file of its level, and the scan ended OK without that level's rest.
TEST_F(WalReadFault, AScanThatCannotReadTheNextTableFileFailsInsteadOfSkippingIt) {
  Fill();
  uint64_t files = 0;
  ASSERT_TRUE(kspool::testing::SpreadLogOverTables(dir_.path(), 16 << 10, &files).ok());
  ASSERT_GE(files, 3u) << "the log is not spread over table files of one level";
  std::unique_ptr<Wal> wal = OpenWal();
  ASSERT_NE(wal, nullptr);
  ASSERT_EQ(ScanAll(wal.get()).size(), static_cast<size_t>(kStoredEntries));

  // Fail each read of a whole scan in turn, as an I/O error or a checksum failure.
  int failed = 0, skip = 0;
  for (; skip < 400; ++skip) {
    const uint64_t faults = fs_->injected_read_faults();
    fs_->FailReadsOnThisThread(skip, 1, /*corrupt=*/skip % 2 == 1);
    std::vector<Entry> out;
    uint64_t next = 0;
    absl::Status s = wal->ScanChoosing(
        {0, UINT64_MAX, 65536}, [](const ScanCandidate&) { return ScanChoice::kTake; }, &out,
        &next);
    HealReads();
    if (fs_->injected_read_faults() == faults) break;  // the scan made fewer reads than skip
    if (!s.ok()) {
      ++failed;
      if (!out.empty()) {
        EXPECT_EQ(next, out.back().seq + 1) << "read " << skip << ": " << s;
      }
      continue;
    }
    ASSERT_EQ(out.size(), static_cast<size_t>(kStoredEntries))
        << "read " << skip << " of the scan failed, and the scan ended OK without "
        << kStoredEntries - out.size() << " live entries (next " << next << ")";
  }
  ASSERT_LT(skip, 400) << "the scan did not stop reading";
  EXPECT_GE(failed, 2) << "of " << skip << " reads failed, no scan reported one";
}

}  // namespace
}  // namespace kspool::wal
