// Topics idle for Options::topic_idle_forget_ms stop being tracked: their commit points
// are no longer saved, their counters (the ledger) and their rows of the discard report
// move under kForgottenTopics, and a topic that comes back gets receive times above its
// old point and counts from 0.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

TEST_F(WalTopicForget, AnIdleTopicIsForgottenAndItsCountersMoveUnderForgotten) {
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
  EXPECT_EQ(st.topics.count("idle"), 0u) << "the ledger kept the name";
  EXPECT_EQ(st.topics[kForgottenTopics].accepted.count, 2u);
  EXPECT_EQ(st.topics[kForgottenTopics].delivered.count, 2u);
  EXPECT_EQ(st.topics["busy"].delivered.count, 4u);
  Report report = wal->GetReport();
  EXPECT_EQ(report.after.count("idle") + report.at_or_before.count("idle"), 0u);
  EXPECT_EQ(report.after[kForgottenTopics][kOutcomeDelivered].count +
                report.at_or_before[kForgottenTopics][kOutcomeDelivered].count,
            2u);

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
  st = wal->GetStats();
  EXPECT_EQ(st.topics.count("idle"), 0u);
  EXPECT_EQ(st.topics[kForgottenTopics].accepted.count, 2u);
  EXPECT_FALSE(Tracks(wal.get(), kForgottenTopics));
  report = wal->GetReport();
  EXPECT_EQ(report.after.count("idle") + report.at_or_before.count("idle"), 0u);
  EXPECT_EQ(report.after[kForgottenTopics][kOutcomeDelivered].count +
                report.at_or_before[kForgottenTopics][kOutcomeDelivered].count,
            2u);

  // It comes back, and counts from 0 under its own name.
  AppendAndDeliver(wal.get(), "idle");
  st = wal->GetStats();
  EXPECT_EQ(st.topics["idle"].accepted.count, 2u);
  EXPECT_EQ(st.topics[kForgottenTopics].accepted.count, 2u);
}

// What the WAL keeps per topic name, in memory and in its meta keys, is bounded by the
// topics it tracks: one message to each of 300 names, with at most 4 tracked, leaves
// the ledger and the discard report with a handful of rows, and the totals exact.
TEST_F(WalTopicForget, ManyNamesLeaveAsManyRowsAsTheTopicsTrackedAndTheTotalsExact) {
  auto wal = OpenWal(/*max_tracked_topics=*/4);
  for (int i = 0; i < 300; ++i) {
    clock_.Advance(1);
    AppendAndDeliver(wal.get(), "name-" + std::to_string(i));
    if (i % 10 == 9) ASSERT_TRUE(wal->ForgetIdleTopics().ok());
  }
  ASSERT_TRUE(wal->ForgetIdleTopics().ok());
  auto check = [](Wal* w) {
    Stats st = w->GetStats();
    EXPECT_LE(st.topics.size(), 5u) << "4 tracked and kForgottenTopics";
    uint64_t accepted = 0, delivered = 0;
    for (const auto& [topic, t] : st.topics) {
      accepted += t.accepted.count;
      delivered += t.delivered.count;
    }
    EXPECT_EQ(accepted, 600u);
    EXPECT_EQ(delivered, 600u);
    Report report = w->GetReport();
    std::set<std::string> rows;
    uint64_t reported = 0;
    for (const OutcomeTable* table : {&report.at_or_before, &report.after}) {
      for (const auto& [topic, outcomes] : *table) {
        rows.insert(topic);
        for (const auto& [outcome, c] : outcomes) reported += c.count;
      }
    }
    EXPECT_LE(rows.size(), 5u);
    EXPECT_EQ(reported, 600u);
  };
  check(wal.get());
  wal.reset();
  wal = OpenWal(4);
  check(wal.get());  // what the meta keys hold
}

// A group being written has taken its topics' new accepted totals before the write:
// forgetting one of them meanwhile (here beyond the cap, as a group of more new topics
// than --max-tracked-topics would) would move its counters away, and the group's totals
// would then count every message it ever had as pending.
TEST_F(WalTopicForget, ATopicOfAGroupBeingWrittenIsNotForgotten) {
  Options o;
  o.dir = dir_.path();
  o.clock = &clock_;
  o.max_tracked_topics = 1;
  std::atomic<bool> armed{false};
  std::vector<std::string> gone_meanwhile{"(not called)"};
  Wal* raw = nullptr;
  o.on_group_commit = [&](size_t, double) {
    if (!armed.exchange(false)) return;
    // From another thread: the committer holds the WAL's read lock here.
    std::thread forget([&] {
      absl::StatusOr<std::vector<std::string>> gone = raw->ForgetIdleTopics();
      gone_meanwhile = gone.ok() ? *gone : std::vector<std::string>{gone.status().ToString()};
    });
    forget.join();
  };
  auto opened = Wal::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Wal> wal = std::move(opened).value();
  raw = wal.get();
  AppendAndDeliver(wal.get(), "t");
  AppendAndDeliver(wal.get(), "u");
  clock_.Advance(1);
  AppendBatch both = MakeBatch("t", 1, "again");
  RecordView v;
  v.topic = "u";
  v.value = "again";
  both.Add(v);
  armed = true;
  ASSERT_TRUE(wal->Append(std::move(both)).ok());
  EXPECT_TRUE(gone_meanwhile.empty()) << gone_meanwhile.front();
  for (int reopen = 0; reopen < 2; ++reopen) {
    Stats st = wal->GetStats();
    EXPECT_EQ(st.topics["t"].accepted.count, 3u);
    EXPECT_EQ(st.topics["t"].pending().count, 1u) << "the log holds one of t's messages";
    EXPECT_EQ(st.topics["u"].pending().count, 1u);
    o.on_group_commit = nullptr;
    wal.reset();
    opened = Wal::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status();
    wal = std::move(opened).value();
  }
}

// A dead letter outlives its topic's counters: trimmed after they moved under
// kForgottenTopics, it is counted there, and the name does not come back.
TEST_F(WalTopicForget, ADeadLetterOfAForgottenTopicTrimmedLaterCountsUnderForgotten) {
  Options o;
  o.dir = dir_.path();
  o.clock = &clock_;
  o.topic_idle_forget_ms = 60 * kMinute;
  o.max_dead_letter_bytes = 1;  // every dead letter is trimmed at the next trim
  auto opened = Wal::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Wal> wal = std::move(opened).value();
  ASSERT_TRUE(wal->Append(MakeBatch("x", 1, "v")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 1u);
  ASSERT_TRUE(wal->Settle({SettleDiscarded(e[0].seq, "x", e[0].size, "expired", "too old",
                                           EncodeRecord(e[0].record), e[0].record.receive_time_ms)})
                  .ok());
  clock_.Advance(61 * kMinute);
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(*gone, std::vector<std::string>{"x"});
  absl::StatusOr<DeadLetterTrim> trim = wal->TrimDeadLetters();
  ASSERT_TRUE(trim.ok()) << trim.status();
  Stats st = wal->GetStats();
  EXPECT_EQ(st.topics.count("x"), 0u);
  EXPECT_EQ(st.topics[kForgottenTopics].discarded["expired"].count, 1u);
  EXPECT_EQ(st.topics[kForgottenTopics].dead_dropped["size"].count, 1u);
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
