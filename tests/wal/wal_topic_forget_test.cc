// Topics idle for Options::topic_idle_forget_ms stop being tracked: their commit points
// are no longer saved, their counters (the ledger) stay, and a topic that comes back
// gets receive times above its old point.
#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

constexpr int64_t kMinute = 60'000;

class WalTopicForget : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal(size_t max_tracked_topics = 0) {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.topic_idle_forget_ms = 60 * kMinute;
    o.max_tracked_topics = max_tracked_topics;
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(wal).value();
  }
  void AppendAndDeliver(Wal* wal, const std::string& topic) {
    absl::StatusOr<AppendResult> r = wal->Append(MakeBatch(topic, 2, "v"));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal, r->first_seq))).ok());
  }
  // What a commit tracker would save now: every tracked topic at `ms`.
  static CommitPoints PointsAt(Wal* wal, int64_t ms) {
    CommitPoints p{ms, {}};
    for (const std::string& t : wal->TrackedTopics()) p.topics_ms[t] = ms;
    return p;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
};

TEST_F(WalTopicForget, AnIdleTopicIsForgottenAndItsCountersStay) {
  auto wal = OpenWal();
  AppendAndDeliver(wal.get(), "idle");
  AppendAndDeliver(wal.get(), "busy");
  ASSERT_TRUE(wal->SaveCommitPoints(PointsAt(wal.get(), clock_.NowMillis())).ok());
  clock_.Advance(30 * kMinute);
  AppendAndDeliver(wal.get(), "busy");

  clock_.Advance(29 * kMinute);
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_TRUE(gone->empty()) << "59 minutes idle is not yet an hour";

  clock_.Advance(1 * kMinute);
  gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(*gone, std::vector<std::string>{"idle"});
  EXPECT_FALSE(Tracks(wal.get(), "idle"));
  EXPECT_TRUE(Tracks(wal.get(), "busy"));
  EXPECT_EQ(wal->SavedCommitPoints().topics_ms.count("idle"), 0u);
  Stats st = wal->GetStats();
  EXPECT_EQ(st.tracked_topics, 1u);
  EXPECT_EQ(st.topics_forgotten, 1u);
  EXPECT_EQ(st.topics["idle"].delivered.count, 2u) << "the ledger keeps the topic";

  // A tracker that still had the topic cannot bring its point back.
  CommitPoints stale = PointsAt(wal.get(), clock_.NowMillis());
  stale.topics_ms["idle"] = clock_.NowMillis();
  ASSERT_TRUE(wal->SaveCommitPoints(stale).ok());
  EXPECT_EQ(wal->SavedCommitPoints().topics_ms.count("idle"), 0u);

  // Nor does a reopen.
  wal.reset();
  wal = OpenWal();
  EXPECT_FALSE(Tracks(wal.get(), "idle"));
  EXPECT_EQ(wal->SavedCommitPoints().topics_ms.count("idle"), 0u);
  EXPECT_EQ(wal->GetStats().topics["idle"].accepted.count, 2u);
}

TEST_F(WalTopicForget, ATopicWithLiveEntriesIsNeverForgotten) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("stuck", 1, "v")).ok());
  clock_.Advance(24 * 60 * kMinute);
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->empty());
  EXPECT_TRUE(Tracks(wal.get(), "stuck"));
}

TEST_F(WalTopicForget, BeyondTheCapTheLongestIdleTopicsAreForgotten) {
  auto wal = OpenWal(/*max_tracked_topics=*/2);
  ASSERT_TRUE(wal->Append(MakeBatch("live", 1, "v")).ok());  // oldest, but not idle
  for (const char* topic : {"t1", "t2", "t3"}) {
    clock_.Advance(1);
    AppendAndDeliver(wal.get(), topic);
  }
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(*gone, (std::vector<std::string>{"t1", "t2"})) << "minutes before the idle time";
  EXPECT_EQ(wal->TrackedTopics(), (std::vector<std::string>{"live", "t3"}));
  gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->empty()) << "at the cap";
}

TEST_F(WalTopicForget, IdleTimeSurvivesARestart) {
  {
    auto wal = OpenWal();
    AppendAndDeliver(wal.get(), "t");
    ASSERT_TRUE(wal->SaveCommitPoints(PointsAt(wal.get(), clock_.NowMillis())).ok());
  }
  clock_.Advance(61 * kMinute);
  auto wal = OpenWal();
  ASSERT_TRUE(Tracks(wal.get(), "t"));
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, std::vector<std::string>{"t"}) << "idle since its last append, not the open";
}

TEST_F(WalTopicForget, AReturningTopicGetsReceiveTimesAboveItsForgottenPoint) {
  int64_t forgotten_point;
  {
    auto wal = OpenWal();
    AppendAndDeliver(wal.get(), "other");
    AppendAndDeliver(wal.get(), "t");
    clock_.Advance(61 * kMinute);
    // The topic's point ran ahead of the global one (another topic held that back).
    forgotten_point = clock_.NowMillis();
    CommitPoints p = PointsAt(wal.get(), forgotten_point);
    p.global_ms = forgotten_point - 50 * kMinute;
    p.topics_ms["other"] = p.global_ms;
    ASSERT_TRUE(wal->SaveCommitPoints(p).ok());
    absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
    ASSERT_TRUE(gone.ok());
    ASSERT_EQ(gone->size(), 2u);
  }
  clock_.Advance(-30 * kMinute);  // the wall clock steps back
  auto wal = OpenWal();
  absl::StatusOr<AppendResult> r = wal->Append(MakeBatch("t", 1, "again"));
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->receive_time_ms, forgotten_point) << "its points never go backwards";
  EXPECT_TRUE(Tracks(wal.get(), "t")) << "tracked again";
}

}  // namespace
}  // namespace kspool::wal
