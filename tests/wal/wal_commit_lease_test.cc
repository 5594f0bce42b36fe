// Commit points under the lease ceiling (FORMAT.md, "Commit points and their lease"):
// points of empty scopes move without writes up to the ceiling, and published points
// never decrease across a crash (also with the clock stepped back) nor claim a message
// still in the log delivered.
#include <gtest/gtest.h>

#include "wal/commit_lease.h"

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {


class WalCommitLease : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  // The process dies with the WAL open: its clean close writes nothing.
  void Crash(std::unique_ptr<Wal>* wal) {
    fs_->CutPowerWhile([&] { wal->reset(); });
  }
  // What the commit tracker publishes for an idle WAL: "now" for every scope.
  CommitPoints Now(const std::vector<std::string>& topics) {
    CommitPoints p;
    p.global_ms = clock_.NowMillis();
    for (const std::string& t : topics) p.topics_ms[t] = clock_.NowMillis();
    return p;
  }
  static uint64_t Fsyncs(Wal* wal) { return wal->GetStats().fsyncs; }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalCommitLease, IdleWalWritesOncePerLeasePeriod) {
  auto wal = OpenWal();
  const uint64_t syncs = fs_->wal_syncs();
  for (int step = 0; step < 600; ++step) {  // 60 s, an update every 100 ms
    clock_.Advance(100);
    ASSERT_TRUE(wal->SaveCommitPoints(Now({"a", "b"})).ok());
    ASSERT_EQ(wal->SavedCommitPoints().global_ms, clock_.NowMillis());
  }
  const uint64_t writes = fs_->wal_syncs() - syncs;
  EXPECT_LE(writes, 1u + 60 / 10);
  EXPECT_GE(writes, 60u / 10) << "the ceiling moves on";
}

TEST_F(WalCommitLease, AfterACrashEmptyScopesStartAtTheCeilingEvenWithTheClockBack) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("a", 1, "x")).ok());
  ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
  CommitPoints published;
  for (int step = 0; step < 35; ++step) {
    clock_.Advance(100);
    published = Now({"a"});
    ASSERT_TRUE(wal->SaveCommitPoints(published).ok());
  }
  Crash(&wal);
  clock_.Advance(-kHour);
  wal = OpenWal();
  CommitPoints start = wal->SavedCommitPoints();
  EXPECT_GE(start.global_ms, published.global_ms);
  EXPECT_GE(start.topics_ms["a"], published.topics_ms["a"]);
  EXPECT_LE(start.global_ms, published.global_ms + 10'000) << "at most one lease ahead";
  auto r = wal->Append(MakeBatch("a", 1, "y"));
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->receive_time_ms, start.global_ms) << "a message received later must not look older";
}

TEST_F(WalCommitLease, AScopeWithLiveEntriesDoesNotStartAtTheCeiling) {
  auto wal = OpenWal();
  auto old = wal->Append(MakeBatch("a", 1, "stuck"));
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(wal->Append(MakeBatch("b", 1, "x")).ok());
  ASSERT_TRUE(wal->Settle(Delivered({ScanAll(wal.get())[1]})).ok());
  const int64_t held = old->receive_time_ms - 1;
  for (int step = 0; step < 20; ++step) {
    clock_.Advance(100);
    CommitPoints p = Now({"b"});
    p.global_ms = held;
    p.topics_ms["a"] = held;
    ASSERT_TRUE(wal->SaveCommitPoints(p).ok());
  }
  Crash(&wal);
  wal = OpenWal();
  CommitPoints start = wal->SavedCommitPoints();
  EXPECT_EQ(start.global_ms, held) << "the stuck message of a is not delivered";
  EXPECT_EQ(start.topics_ms["a"], held);
  EXPECT_GE(start.topics_ms["b"], clock_.NowMillis());
}

TEST_F(WalCommitLease, ALeasedPointIsPersistedByTheAppendThatEndsTheIdle) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->SaveCommitPoints(Now({"b"})).ok());  // writes the first ceiling
  clock_.Advance(3000);
  const uint64_t fsyncs = Fsyncs(wal.get());
  const CommitPoints leased = Now({"b"});
  ASSERT_TRUE(wal->SaveCommitPoints(leased).ok());
  ASSERT_EQ(Fsyncs(wal.get()), fsyncs) << "the scenario: the point was leased, not written";
  clock_.Advance(10);
  ASSERT_TRUE(wal->Append(MakeBatch("b", 1, "x")).ok());  // b and the WAL are no longer empty
  Crash(&wal);
  wal = OpenWal();
  CommitPoints start = wal->SavedCommitPoints();
  EXPECT_GE(start.global_ms, leased.global_ms);
  EXPECT_GE(start.topics_ms["b"], leased.topics_ms.at("b"));
  EXPECT_LT(start.topics_ms["b"], ScanAll(wal.get())[0].record.receive_time_ms)
      << "the live message is not claimed delivered";
}

TEST_F(WalCommitLease, ACleanCloseLeavesNoLeaseSoReceiveTimesFollowTheClock) {
  CommitPoints published;
  {
    auto wal = OpenWal();
    // A topic gets points once the WAL tracks it: once appended to.
    ASSERT_TRUE(wal->Append(MakeBatch("a", 1, "x")).ok());
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
    for (int step = 0; step < 25; ++step) {
      clock_.Advance(100);
      published = Now({"a"});
      ASSERT_TRUE(wal->SaveCommitPoints(published).ok());
    }
  }
  clock_.Advance(1);
  auto wal = OpenWal();
  CommitPoints start = wal->SavedCommitPoints();
  EXPECT_EQ(start.global_ms, published.global_ms);
  EXPECT_EQ(start.topics_ms["a"], published.topics_ms["a"]);
  auto r = wal->Append(MakeBatch("a", 1, "x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->receive_time_ms, clock_.NowMillis());
}

}  // namespace
// The first points an append writes (CommitLease::PlanFirstPoints): for topics without
// a point and without live entries only. A topic with live entries but no point (a WAL
// written before first points were) must not get one at the append's receive time: its
// older entries would be claimed delivered.
TEST(CommitLeaseFirstPoints, OnlyForTopicsWithoutAPointAndWithoutLiveEntries) {
  CommitLease lease;
  std::map<std::string, TopicStats> ledger;
  ledger["old"].accepted = {2, 20};  // live, no point
  ledger["back"].accepted = {1, 10};
  ledger["back"].delivered = {1, 10};  // forgotten: nothing live
  CommitPoints points;
  points.topics_ms["known"] = 500;
  lease.Open(points, 0, ledger);
  const std::map<std::string, Counts> appended = {
      {"old", {1, 10}}, {"back", {1, 10}}, {"new", {1, 10}}, {"known", {1, 10}}};
  CommitPoints leased;
  lease.PlanFirstPoints(appended, 1000, ledger, &leased);
  EXPECT_EQ(leased.topics_ms, (std::map<std::string, int64_t>{{"back", 999}, {"new", 999}}));
  lease.SavedFirst(leased);
  EXPECT_EQ(lease.saved().topics_ms.at("new"), 999);
  EXPECT_EQ(lease.saved().topics_ms.count("old"), 0u);
}

}  // namespace kspool::wal
