// AppendAsync: the committer thread answers each queued append exactly once, only after
// its group is synced; refusals come back at once; closing the WAL commits the queue.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "base/mutex.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

class WalAsyncAppend : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal(uint64_t group_commit_delay_us = 0, size_t max_group_requests = 4096) {
    Options o;
    o.dir = dir_.path();
    o.group_commit_delay_us = group_commit_delay_us;
    o.max_group_requests = max_group_requests;
    o.env = kspool::testing::EnvFor(fs_);
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(wal).value();
  }

  // Collects the outcomes of async appends; Wait() blocks until `n` have arrived.
  struct Outcomes {
    Mutex mu;
    CondVar cv;
    std::vector<absl::StatusOr<AppendResult>> results ABSL_GUARDED_BY(mu);
    AppendCallback Callback() {
      return [this](absl::StatusOr<AppendResult> r) {
        MutexLock l(&mu);
        results.push_back(std::move(r));
        cv.SignalAll();
      };
    }
    std::vector<absl::StatusOr<AppendResult>> Wait(size_t n) {
      MutexLock l(&mu);
      while (results.size() < n) cv.Wait(&mu);
      return results;
    }
  };

  kspool::testing::TempDir dir_;
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalAsyncAppend, OneThreadKeepsManyAppendsInFlightAndTheyShareFsyncs) {
  auto wal = OpenWal();
  const uint64_t syncs_before = fs_->wal_syncs();
  const uint64_t fsyncs_before = wal->GetStats().fsyncs;  // Open's own synced write
  constexpr int kAppends = 2000;
  Outcomes out;
  for (int i = 0; i < kAppends; ++i) wal->AppendAsync(MakeBatch("t", 2, "v"), out.Callback());
  std::vector<absl::StatusOr<AppendResult>> results = out.Wait(kAppends);
  ASSERT_EQ(results.size(), static_cast<size_t>(kAppends)) << "each callback runs once";
  std::set<uint64_t> firsts;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    firsts.insert(r->first_seq);
  }
  EXPECT_EQ(firsts.size(), static_cast<size_t>(kAppends)) << "distinct sequence ranges";
  EXPECT_EQ(*firsts.rbegin() - *firsts.begin(), 2u * (kAppends - 1));
  EXPECT_EQ(ScanAll(wal.get()).size(), 2u * kAppends);
  Stats s = wal->GetStats();
  EXPECT_EQ(s.appends, static_cast<uint64_t>(kAppends));
  EXPECT_EQ(fs_->wal_syncs() - syncs_before, s.group_commits) << "one sync per group";
  EXPECT_EQ(s.fsyncs - fsyncs_before, s.group_commits);
  // One thread queues far faster than the disk syncs: no thread per append is needed
  // for appends to share a group.
  EXPECT_LE(s.group_commits * 4, static_cast<uint64_t>(kAppends)) << s.group_commits << " fsyncs";
}

TEST_F(WalAsyncAppend, CallbackMayCallBackIntoTheWal) {
  auto wal = OpenWal();
  Mutex mu;
  CondVar cv;
  bool done = false;
  uint64_t entries_seen = 0;
  wal->AppendAsync(MakeBatch("t", 3, "v"), [&](absl::StatusOr<AppendResult> r) {
    ASSERT_TRUE(r.ok()) << r.status();
    const uint64_t entries = wal->GetStats().entries;  // takes the WAL's lock
    MutexLock l(&mu);
    entries_seen = entries;
    done = true;
    cv.Signal();
  });
  MutexLock l(&mu);
  while (!done) cv.Wait(&mu);
  EXPECT_EQ(entries_seen, 3u) << "the batch is counted before its callback runs";
}

TEST_F(WalAsyncAppend, AfterAFailedSyncRefusalsComeBackAtOnceOnTheCallersThread) {
  auto wal = OpenWal();
  fs_->FailNextSyncs(1);
  Outcomes failed;
  wal->AppendAsync(MakeBatch("t", 1, "lost"), failed.Callback());
  ASSERT_EQ(failed.Wait(1).front().status().code(), absl::StatusCode::kUnavailable);
  bool called = false;
  absl::Status refused;
  wal->AppendAsync(MakeBatch("t", 1, "after"), [&](absl::StatusOr<AppendResult> r) {
    called = true;
    refused = r.status();
  });
  ASSERT_TRUE(called) << "a refused append is answered before AppendAsync returns";
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find("no further appends are acknowledged"), std::string::npos)
      << refused;
}

TEST_F(WalAsyncAppend, ClosingTheWalCommitsWhatIsQueuedAndAnswersIt) {
  constexpr int kAppends = 500;
  Outcomes out;
  {
    auto wal = OpenWal();
    for (int i = 0; i < kAppends; ++i) {
      wal->AppendAsync(MakeBatch("t", 1, "q" + std::to_string(i) + "-"), out.Callback());
    }
  }  // destroyed with appends still queued
  std::vector<absl::StatusOr<AppendResult>> results = out.Wait(kAppends);
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  fs_->DropUnsyncedData();  // what was acknowledged was synced
  auto wal = OpenWal();
  std::vector<Entry> entries = ScanAll(wal.get());
  ASSERT_EQ(entries.size(), static_cast<size_t>(kAppends));
  for (int i = 0; i < kAppends; ++i) {
    EXPECT_EQ(entries[i].record.value, "q" + std::to_string(i) + "-0") << "queue order kept";
  }
}

// Appends 20 ms apart: without the delay each is its own synced write.
TEST_F(WalAsyncAppend, GroupCommitDelayGathersAppendsIntoOneSyncedWrite) {
  auto wal = OpenWal(/*group_commit_delay_us=*/500'000);
  const uint64_t fsyncs_before = wal->GetStats().fsyncs;
  Outcomes out;
  for (int i = 0; i < 3; ++i) {
    wal->AppendAsync(MakeBatch("t", 1, "v"), out.Callback());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<absl::StatusOr<AppendResult>> results = out.Wait(3);
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(results[1]->first_seq, results[0]->first_seq + 1);
  EXPECT_EQ(results[2]->first_seq, results[0]->first_seq + 2);
  EXPECT_EQ(wal->GetStats().fsyncs - fsyncs_before, 1u) << "one group, one fsync";
  EXPECT_EQ(results[0]->receive_time_ms, results[2]->receive_time_ms) << "one group, one time";
}

TEST_F(WalAsyncAppend, AFullGroupIsWrittenWithoutWaitingOutTheDelay) {
  auto wal = OpenWal(/*group_commit_delay_us=*/60'000'000, /*max_group_requests=*/2);
  const auto start = std::chrono::steady_clock::now();
  Outcomes out;
  wal->AppendAsync(MakeBatch("t", 1, "a"), out.Callback());
  wal->AppendAsync(MakeBatch("t", 1, "b"), out.Callback());
  for (const auto& r : out.Wait(2)) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(WalAsyncAppend, ClosingTheWalDuringTheDelayCommitsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  Outcomes out;
  {
    auto wal = OpenWal(/*group_commit_delay_us=*/60'000'000);
    wal->AppendAsync(MakeBatch("t", 1, "kept-"), out.Callback());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the committer is waiting
  }
  std::vector<absl::StatusOr<AppendResult>> results = out.Wait(1);
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  fs_->DropUnsyncedData();
  auto wal = OpenWal();
  std::vector<Entry> entries = ScanAll(wal.get());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].record.value, "kept-0");
}

}  // namespace
}  // namespace kspool::wal
