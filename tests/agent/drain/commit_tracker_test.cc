#include "agent/drain/commit_tracker.h"

#include <gtest/gtest.h>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::agent {
namespace {

using wal::MakeBatch;

class CommitTrackerTest : public ::testing::Test {
 protected:
  std::unique_ptr<wal::Wal> Open(int64_t topic_idle_forget_ms = 0) {
    wal::Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.topic_idle_forget_ms = topic_idle_forget_ms;
    o.env = kspool::testing::EnvFor(fs_);
    return std::move(wal::Wal::Open(o)).value();
  }
  // The agent dies with the WAL open: nothing more reaches the disk.
  void Crash(std::unique_ptr<CommitTracker>* t, std::unique_ptr<wal::Wal>* w) {
    t->reset();
    fs_->CutPowerWhile([&] { w->reset(); });
  }
  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(CommitTrackerTest, EmptyWalCommitPointIsNow) {
  auto w = Open();
  CommitTracker t(w.get());
  ASSERT_TRUE(t.Update(1, {}).ok());
  EXPECT_EQ(t.Current().global_ms, 1'000'000);
  clock_.Advance(250);
  ASSERT_TRUE(t.Update(1, {}).ok());
  EXPECT_EQ(t.Current().global_ms, 1'000'250);
}

TEST_F(CommitTrackerTest, OldestUnreadEntryHoldsThePointBack) {
  auto w = Open();
  ASSERT_TRUE(w->Append(MakeBatch("a", 1, "x")).ok());  // received at 1'000'000
  clock_.Advance(500);
  ASSERT_TRUE(w->Append(MakeBatch("b", 1, "y")).ok());  // received at 1'000'500
  CommitTracker t(w.get());
  ASSERT_TRUE(t.Update(1, {}).ok());
  EXPECT_EQ(t.Current().global_ms, 999'999);
  EXPECT_EQ(t.Current().topics_ms.at("a"), 999'999);
  // b's first point came with its first append (its receive time - 1): a's older unread
  // entry does not hold it back below that.
  EXPECT_EQ(t.Current().topics_ms.at("b"), 1'000'499);
}

TEST_F(CommitTrackerTest, PerTopicPointsFollowTheWindow) {
  auto w = Open();
  ASSERT_TRUE(w->Append(MakeBatch("a", 1, "x")).ok());  // seq 1 at 1'000'000
  clock_.Advance(500);
  ASSERT_TRUE(w->Append(MakeBatch("b", 1, "y")).ok());  // seq 2 at 1'000'500
  clock_.Advance(500);
  CommitTracker t(w.get());
  // Both read into the drain window (cursor 3); only "a" is still unacknowledged.
  std::vector<wal::Entry> e = wal::ScanAll(w.get());
  ASSERT_TRUE(w->Settle(wal::Delivered({e[1]})).ok());
  ASSERT_TRUE(t.Update(3, {{"a", 1'000'000}}).ok());
  EXPECT_EQ(t.Current().global_ms, 999'999);
  EXPECT_EQ(t.Current().topics_ms.at("a"), 999'999);
  EXPECT_EQ(t.Current().topics_ms.at("b"), 1'001'000);  // b is fully delivered: now
}

TEST_F(CommitTrackerTest, NeverDecreasesAcrossRestartEvenIfTheClockJumpsBack) {
  int64_t before;
  {
    auto w = Open();
    CommitTracker t(w.get());
    clock_.Advance(10'000);
    ASSERT_TRUE(t.Update(1, {}).ok());
    before = t.Current().global_ms;
  }
  clock_.Set(500);  // an hour-scale jump back across the restart
  auto w = Open();
  CommitTracker t(w.get());
  EXPECT_EQ(t.Current().global_ms, before);
  auto r = w->Append(MakeBatch("a", 1, "x"));
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->receive_time_ms, before) << "a message received later must not look older";
  ASSERT_TRUE(t.Update(1, {}).ok());
  EXPECT_EQ(t.Current().global_ms, before);
}

TEST_F(CommitTrackerTest, AForgottenTopicIsNoLongerTrackedOrSaved) {
  auto w = Open(/*topic_idle_forget_ms=*/60'000);
  ASSERT_TRUE(w->Append(MakeBatch("idle", 1, "x")).ok());
  ASSERT_TRUE(w->Settle(wal::Delivered(wal::ScanAll(w.get()))).ok());
  CommitTracker t(w.get());
  ASSERT_TRUE(t.Update(2, {}).ok());
  ASSERT_EQ(t.Current().topics_ms.count("idle"), 1u);

  clock_.Advance(60'000);
  absl::StatusOr<std::vector<std::string>> gone = w->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok());
  ASSERT_EQ(gone->size(), 1u);
  ASSERT_TRUE(t.Update(2, {}).ok());
  EXPECT_EQ(t.Current().topics_ms.count("idle"), 0u) << "not every topic ever seen";
  EXPECT_EQ(w->SavedCommitPoints().topics_ms.count("idle"), 0u);

  // It comes back with its next message.
  ASSERT_TRUE(w->Append(MakeBatch("idle", 1, "y")).ok());
  ASSERT_TRUE(t.Update(2, {}).ok());
  EXPECT_EQ(t.Current().topics_ms.count("idle"), 1u);
}

// A forgotten topic returns while another topic's old entry, unread, holds the receive
// bound back: its point must not start below what it published before it was forgotten,
// neither at once nor after a crash before its next point is written (drain_sim's
// topic_forget found it 37 s below; before, a topic without a point took the bound's).
TEST_F(CommitTrackerTest, AReturningTopicsPointStartsAboveWhatItPublishedBefore) {
  auto w = std::make_unique<std::unique_ptr<wal::Wal>>(Open(/*topic_idle_forget_ms=*/60'000));
  ASSERT_TRUE((*w)->Append(MakeBatch("idle", 1, "x")).ok());  // seq 1
  ASSERT_TRUE((*w)->Settle(wal::Delivered(wal::ScanAll(w->get()))).ok());
  auto t = std::make_unique<CommitTracker>(w->get());
  clock_.Advance(1000);
  ASSERT_TRUE((*w)->Append(MakeBatch("stuck", 1, "s")).ok());  // seq 2, stays live
  clock_.Advance(60'000);
  ASSERT_TRUE(t->Update(3, {{"stuck", 1'001'000}}).ok());
  const int64_t published = t->Current().topics_ms.at("idle");
  ASSERT_GE(published, 1'061'000 - 1);  // idle: nothing live, so "now"
  ASSERT_EQ((*w)->ForgetIdleTopics().value(), std::vector<std::string>{"idle"});
  ASSERT_TRUE(t->Update(3, {{"stuck", 1'001'000}}).ok());
  ASSERT_EQ(t->Current().topics_ms.count("idle"), 0u);

  clock_.Advance(100);
  ASSERT_TRUE((*w)->Append(MakeBatch("idle", 1, "y")).ok());  // seq 3, unread
  ASSERT_TRUE(t->Update(2, {}).ok());  // seq 2, stuck's, is the oldest unread
  EXPECT_GE(t->Current().topics_ms.at("idle"), published);
  EXPECT_LT(t->Current().topics_ms.at("idle"), 1'061'100) << "not past its live entry";
  // A crash before its next point is written: it starts from the point its append wrote.
  Crash(&t, w.get());
  *w = Open(60'000);
  t = std::make_unique<CommitTracker>(w->get());
  ASSERT_TRUE(t->Update(2, {}).ok());
  EXPECT_GE(t->Current().topics_ms.at("idle"), published);
  EXPECT_LT(t->Current().topics_ms.at("idle"), 1'061'100);
}

// The append that brings a forgotten topic back fails on a full volume: the topic stays
// tracked through the reopen, but no point of its own was saved. Computed from the
// receive bound (another topic's old entry), its point went below what it had published
// before (drain_sim seed 886404710061, volume_full). It gets none until it has one.
TEST_F(CommitTrackerTest, AReturningTopicWhoseAppendFailedGetsNoPointBelowItsOldOne) {
  auto w = Open(/*topic_idle_forget_ms=*/60'000);
  ASSERT_TRUE(w->Append(MakeBatch("idle", 1, "x")).ok());  // seq 1
  ASSERT_TRUE(w->Settle(wal::Delivered(wal::ScanAll(w.get()))).ok());
  CommitTracker t(w.get());
  clock_.Advance(1000);
  ASSERT_TRUE(w->Append(MakeBatch("stuck", 1, "s")).ok());  // seq 2, stays live
  clock_.Advance(60'000);
  ASSERT_TRUE(t.Update(3, {{"stuck", 1'001'000}}).ok());
  const int64_t published = t.Current().topics_ms.at("idle");
  ASSERT_EQ(w->ForgetIdleTopics().value(), std::vector<std::string>{"idle"});
  ASSERT_TRUE(t.Update(3, {{"stuck", 1'001'000}}).ok());
  ASSERT_EQ(t.Current().topics_ms.count("idle"), 0u);

  clock_.Advance(100);
  fs_->SetNoSpace(true);
  ASSERT_FALSE(w->Append(MakeBatch("idle", 1, "y")).ok());
  fs_->SetNoSpace(false);
  ASSERT_TRUE(w->Reopen().ok());
  ASSERT_TRUE(t.Update(2, {}).ok());  // seq 2, stuck's, is the oldest unread
  const wal::CommitPoints after = t.Current();
  auto idle = after.topics_ms.find("idle");
  if (idle != after.topics_ms.end()) {
    EXPECT_GE(idle->second, published) << "below the point published before it was forgotten";
  }
  // Its next append gives it a point again, above the old one.
  ASSERT_TRUE(w->Append(MakeBatch("idle", 1, "z")).ok());
  ASSERT_TRUE(t.Update(2, {}).ok());
  EXPECT_GE(t.Current().topics_ms.at("idle"), published);
}

TEST_F(CommitTrackerTest, IdleAgentSyncsAtMostOncePerTenSeconds) {
  auto w = Open();
  ASSERT_TRUE(w->Append(MakeBatch("a", 2, "x")).ok());  // a topic that was busy once
  ASSERT_TRUE(w->Settle(wal::Delivered(wal::ScanAll(w.get()))).ok());
  CommitTracker t(w.get());
  const uint64_t syncs = fs_->wal_syncs(), fsyncs = w->GetStats().fsyncs;
  for (int step = 0; step < 600; ++step) {  // one minute of the drain's 100 ms updates
    clock_.Advance(100);
    ASSERT_TRUE(t.Update(3, {}).ok());
    ASSERT_EQ(t.Current().global_ms, clock_.NowMillis()) << "the point keeps following the clock";
    ASSERT_EQ(t.Current().topics_ms.at("a"), clock_.NowMillis());
  }
  const uint64_t written = fs_->wal_syncs() - syncs;
  std::printf("synced writes in 60 s idle: %llu\n", static_cast<unsigned long long>(written));
  EXPECT_LE(written, 1u + 60 / 10) << "at most one synced write per 10 s";
  EXPECT_EQ(w->GetStats().fsyncs - fsyncs, written) << "kspool_wal_fsyncs_total counts them";
}

TEST_F(CommitTrackerTest, NeverDecreasesAcrossACrashWithTheClockSteppedBackAnHour) {
  auto w = Open();
  ASSERT_TRUE(w->Append(MakeBatch("a", 1, "x")).ok());
  ASSERT_TRUE(w->Settle(wal::Delivered(wal::ScanAll(w.get()))).ok());
  auto t = std::make_unique<CommitTracker>(w.get());
  for (int step = 0; step < 157; ++step) {  // 15.7 s idle: some points were never written
    clock_.Advance(100);
    ASSERT_TRUE(t->Update(2, {}).ok());
  }
  const wal::CommitPoints before = t->Current();
  Crash(&t, &w);
  clock_.Advance(-3'600'000);
  w = Open();
  t = std::make_unique<CommitTracker>(w.get());
  auto expect_not_below = [&](const std::string& when) {
    EXPECT_GE(t->Current().global_ms, before.global_ms) << when;
    EXPECT_GE(t->Current().topics_ms.at("a"), before.topics_ms.at("a")) << when;
  };
  expect_not_below("at start");
  for (int step = 0; step < 20; ++step) {
    clock_.Advance(100);
    ASSERT_TRUE(t->Update(2, {}).ok());
    expect_not_below("after an update");
  }
  auto r = w->Append(MakeBatch("a", 1, "y"));
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->receive_time_ms, t->Current().global_ms) << "a message received later must not look older";
  ASSERT_TRUE(t->Update(2, {}).ok());
  expect_not_below("with an entry in the WAL");
}

}  // namespace
}  // namespace kspool::agent
