#include <gtest/gtest.h>

#include <thread>

#include "tests/support/fault_fs.h"
#include "base/mutex.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

TEST(WalGroupCommit, ConcurrentAppendersShareFsyncs) {
  kspool::testing::TempDir dir;
  auto fs = std::make_shared<kspool::testing::FaultInjectionFileSystem>();
  Options o;
  o.dir = dir.path();
  o.env = kspool::testing::EnvFor(fs);
  auto wal = std::move(Wal::Open(o)).value();
  const uint64_t syncs_before = fs->wal_syncs();
  const uint64_t fsyncs_before = wal->GetStats().fsyncs;  // Open's own synced write
  constexpr int kThreads = 16, kAppends = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAppends; ++i) {
        if (!wal->Append(MakeBatch("t" + std::to_string(t % 4), 1, "v")).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  Stats s = wal->GetStats();
  const uint64_t appends = kThreads * kAppends;
  EXPECT_EQ(s.appends, appends);
  EXPECT_EQ(ScanAll(wal.get()).size(), appends);
  // Every group is one synced write; the file system saw exactly those syncs.
  const uint64_t syncs = fs->wal_syncs() - syncs_before;
  std::printf("appends=%llu group commits=%llu wal syncs=%llu\n", (unsigned long long)appends,
              (unsigned long long)s.group_commits, (unsigned long long)syncs);
  EXPECT_EQ(syncs, s.group_commits);
  EXPECT_EQ(s.fsyncs - fsyncs_before, s.group_commits) << "only group commits wrote meanwhile";
  EXPECT_LE(s.group_commits * 4, appends) << "group commit should share fsyncs";
}

TEST(WalGroupCommit, SequenceNumbersOfConcurrentAppendsAreUniqueAndContiguousPerCall) {
  kspool::testing::TempDir dir;
  Options o;
  o.dir = dir.path();
  auto wal = std::move(Wal::Open(o)).value();
  std::vector<std::thread> threads;
  Mutex mu;
  std::vector<std::pair<uint64_t, int>> ranges;  // first seq, thread
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto r = wal->Append(MakeBatch("t", 3, "w" + std::to_string(t) + "-"));
        ASSERT_TRUE(r.ok());
        MutexLock l(&mu);
        ranges.push_back({r->first_seq, t});
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<Entry> all = ScanAll(wal.get());
  ASSERT_EQ(all.size(), 8u * 50 * 3);
  std::map<uint64_t, const Entry*> by_seq;
  for (const Entry& e : all) by_seq[e.seq] = &e;
  for (auto [first, t] : ranges) {
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(by_seq.count(first + k));
      EXPECT_EQ(by_seq[first + k]->record.value, "w" + std::to_string(t) + "-" + std::to_string(k));
    }
  }
}

}  // namespace
}  // namespace kspool::wal
