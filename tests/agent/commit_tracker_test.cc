#include "agent/commit_tracker.h"

#include <gtest/gtest.h>

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
    return std::move(wal::Wal::Open(o)).value();
  }
  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000};
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
  EXPECT_EQ(t.Current().topics_ms.at("b"), 999'999);  // a conservative bound for b
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

}  // namespace
}  // namespace kspool::agent
