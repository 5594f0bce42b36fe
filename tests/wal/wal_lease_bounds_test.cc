// Where the commit-point lease (rocks_wal_commit_points.cc) meets the bounds: the
// report's point moves with a leased point and never decreases across a crash; a
// report bucket that straddles the point does not force a write per update; a
// forgotten topic stays forgotten after a crash or a restart, lease or not.
#include <gtest/gtest.h>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {


class WalLeaseBounds : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal(size_t max_report_buckets = 4096) {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    o.topic_idle_forget_ms = kHour;
    o.max_report_buckets = max_report_buckets;
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  // The process dies with the WAL open: its clean close writes nothing.
  void Crash(std::unique_ptr<Wal>* wal) {
    fs_->CutPowerWhile([&] { wal->reset(); });
  }
  void AppendAndDeliver(Wal* wal, const std::string& topic) {
    absl::StatusOr<AppendResult> r = wal->Append(MakeBatch(topic, 2, "v"));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal, r->first_seq))).ok());
  }
  // What the commit tracker publishes for an idle WAL: "now" for every tracked topic.
  CommitPoints Now(Wal* wal) {
    CommitPoints p{clock_.NowMillis(), {}};
    for (const std::string& t : wal->TrackedTopics()) p.topics_ms[t] = clock_.NowMillis();
    return p;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalLeaseBounds, TheReportPointFollowsALeasedPointAndNeverDecreasesAcrossACrash) {
  auto wal = OpenWal();
  AppendAndDeliver(wal.get(), "a");
  clock_.Advance(100);
  ASSERT_TRUE(wal->SaveCommitPoints(Now(wal.get())).ok());  // written: folds both messages
  ASSERT_EQ(wal->GetReport().commit_point_ms, clock_.NowMillis());

  clock_.Advance(3000);
  const uint64_t fsyncs = wal->GetStats().fsyncs;
  const CommitPoints leased = Now(wal.get());
  ASSERT_TRUE(wal->SaveCommitPoints(leased).ok());
  ASSERT_EQ(wal->GetStats().fsyncs, fsyncs) << "the scenario: the point was leased, not written";
  Report r = wal->GetReport();
  EXPECT_EQ(r.commit_point_ms, leased.global_ms) << "nothing waits to be folded: exact there";
  EXPECT_EQ(r.at_or_before["a"][kOutcomeDelivered].count, 2u);

  Crash(&wal);
  clock_.Advance(-kHour);
  wal = OpenWal();
  r = wal->GetReport();
  EXPECT_GE(r.commit_point_ms, leased.global_ms) << "the report's point never decreases";
  EXPECT_LE(r.commit_point_ms, wal->SavedCommitPoints().global_ms);
  EXPECT_EQ(r.at_or_before["a"][kOutcomeDelivered].count, 2u);
  EXPECT_TRUE(r.after.empty() || r.after["a"][kOutcomeDelivered].count == 0);
}

TEST_F(WalLeaseBounds, AStraddlingReportBucketDoesNotForceAWritePerUpdate) {
  auto wal = OpenWal(/*max_report_buckets=*/2);
  AppendAndDeliver(wal.get(), "b");  // bucket r1
  clock_.Advance(10);
  auto stuck = wal->Append(MakeBatch("stuck", 1, "s"));  // r2, stays live
  ASSERT_TRUE(stuck.ok());
  clock_.Advance(10);
  AppendAndDeliver(wal.get(), "b");  // r3
  clock_.Advance(10);
  AppendAndDeliver(wal.get(), "b");  // r4: three buckets, merged into [r1, r3] and [r4]
  ASSERT_EQ(wal->GetStats().report_coarsenings, 1u) << "the scenario";
  const int64_t held = stuck->receive_time_ms - 1;  // inside the merged bucket
  auto points = [&] {
    CommitPoints p = Now(wal.get());
    p.global_ms = held;
    p.topics_ms["stuck"] = held;
    return p;
  };
  ASSERT_TRUE(wal->SaveCommitPoints(points()).ok());
  const int64_t report_point = wal->GetReport().commit_point_ms;
  EXPECT_LT(report_point, held) << "just below the merged bucket that straddles the point";

  const uint64_t fsyncs = wal->GetStats().fsyncs;
  for (int step = 0; step < 50; ++step) {  // 5 s of the tracker's updates
    clock_.Advance(100);
    ASSERT_TRUE(wal->SaveCommitPoints(points()).ok());
    ASSERT_EQ(wal->GetReport().commit_point_ms, report_point);
  }
  EXPECT_EQ(wal->GetStats().fsyncs, fsyncs) << "only b's leased point moved: nothing to write";
}

TEST_F(WalLeaseBounds, AForgottenTopicStaysForgottenAfterACrashUnderTheLease) {
  auto wal = OpenWal();
  AppendAndDeliver(wal.get(), "idle");
  AppendAndDeliver(wal.get(), "busy");
  ASSERT_TRUE(wal->SaveCommitPoints(Now(wal.get())).ok());
  clock_.Advance(61 * 60'000);
  AppendAndDeliver(wal.get(), "busy");
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(*gone, std::vector<std::string>{"idle"});
  ASSERT_TRUE(wal->SaveCommitPoints(Now(wal.get())).ok());  // written: a new ceiling
  clock_.Advance(3000);
  ASSERT_TRUE(wal->SaveCommitPoints(Now(wal.get())).ok());  // leased under it

  Crash(&wal);
  wal = OpenWal();
  EXPECT_FALSE(Tracks(wal.get(), "idle"));
  EXPECT_EQ(wal->SavedCommitPoints().topics_ms.count("idle"), 0u)
      << "empty scopes start at the ceiling, but only those with a point of their own";
  EXPECT_TRUE(Tracks(wal.get(), "busy"));
  EXPECT_GE(wal->SavedCommitPoints().topics_ms["busy"], clock_.NowMillis());
}

TEST_F(WalLeaseBounds, AForgottenTopicsLeasedPointIsDeletedWithIt) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("b", 1, "first")).ok());
  ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
  ASSERT_TRUE(wal->SaveCommitPoints(Now(wal.get())).ok());  // b's first point: written
  clock_.Advance(3000);
  const uint64_t fsyncs = wal->GetStats().fsyncs;
  ASSERT_TRUE(wal->SaveCommitPoints(Now(wal.get())).ok());
  ASSERT_EQ(wal->GetStats().fsyncs, fsyncs) << "the scenario: b's point was leased";
  clock_.Advance(10);
  AppendAndDeliver(wal.get(), "b");  // the append persists b's leased point
  clock_.Advance(61 * 60'000);
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(*gone, std::vector<std::string>{"b"});

  wal.reset();  // a clean restart
  wal = OpenWal();
  EXPECT_FALSE(Tracks(wal.get(), "b"));
  EXPECT_EQ(wal->SavedCommitPoints().topics_ms.count("b"), 0u);
  EXPECT_EQ(wal->GetStats().topics.count("b"), 0u);
  EXPECT_EQ(wal->GetStats().topics[kForgottenTopics].delivered.count, 3u)
      << "its counters moved under kForgottenTopics";
}

}  // namespace
}  // namespace kspool::wal
