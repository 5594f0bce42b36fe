// The discard report's after-commit-point table stays bounded while the commit point is
// held back, and the report stays exact: at_or_before holds exactly the messages
// received at or before the report's point, which never decreases.
#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

constexpr int64_t kStart = 1'000'000;
constexpr size_t kMaxBuckets = 8;

class WalReportBuckets : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.max_report_buckets = kMaxBuckets;
    return std::move(Wal::Open(o)).value();
  }
  // One message of "stuck" at kStart, held back, then `n` messages of "healthy", one per
  // millisecond, each settled at once; the commit point is saved after each, held at
  // kStart - 1. Returns the healthy messages' receive times.
  std::vector<int64_t> HoldBackAndSettle(Wal* wal, int n) {
    clock_.Set(kStart);
    EXPECT_TRUE(wal->Append(MakeBatch("stuck", 1, "s")).ok());
    std::vector<int64_t> times;
    for (int i = 0; i < n; ++i) {
      clock_.Advance(1);
      absl::StatusOr<AppendResult> r = wal->Append(MakeBatch("healthy", 1, "h"));
      EXPECT_TRUE(r.ok());
      times.push_back(r->receive_time_ms);
      std::vector<Entry> e = ScanAll(wal, r->first_seq);
      EXPECT_TRUE(wal->Settle(Delivered(e)).ok());
      EXPECT_TRUE(wal->SaveCommitPoints({kStart - 1, {}}).ok());
      max_buckets_seen_ = std::max(max_buckets_seen_, wal->GetStats().report_buckets);
    }
    return times;
  }
  static uint64_t Count(const OutcomeTable& t, const std::string& topic) {
    auto it = t.find(topic);
    if (it == t.end()) return 0;
    auto c = it->second.find("delivered");
    return c == it->second.end() ? 0 : c->second.count;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{kStart};
  size_t max_buckets_seen_ = 0;
};

TEST_F(WalReportBuckets, TheAfterTableStaysBoundedWhileTheCommitPointIsHeldBack) {
  auto wal = OpenWal();
  HoldBackAndSettle(wal.get(), 500);
  EXPECT_LE(max_buckets_seen_, kMaxBuckets) << "not one bucket per receive millisecond";
  Stats st = wal->GetStats();
  EXPECT_GT(st.report_coarsenings, 0u);
  Report r = wal->GetReport();
  EXPECT_EQ(Count(r.after, "healthy"), 500u) << "merging loses no count";
  EXPECT_EQ(r.after["healthy"]["delivered"].min_receive_ms, kStart + 1);
  EXPECT_EQ(r.after["healthy"]["delivered"].max_receive_ms, kStart + 500);

  // The table is persisted merged, and stays merged after a reopen.
  wal.reset();
  wal = OpenWal();
  EXPECT_LE(wal->GetStats().report_buckets, kMaxBuckets);
  EXPECT_EQ(Count(wal->GetReport().after, "healthy"), 500u);
}

TEST_F(WalReportBuckets, AReportIsExactAtItsPointWhenABucketStraddlesTheCommitPoint) {
  auto wal = OpenWal();
  std::vector<int64_t> times = HoldBackAndSettle(wal.get(), 500);
  std::vector<Entry> stuck = ScanAll(wal.get());
  ASSERT_EQ(stuck.size(), 1u);
  ASSERT_TRUE(wal->Settle(Delivered(stuck)).ok());

  int64_t last_point = kStart - 1;
  bool straddled = false;
  for (int64_t t : {kStart + 137, kStart + 250, kStart + 333, kStart + 1000}) {
    // Legal: everything received at or before t is settled.
    ASSERT_TRUE(wal->SaveCommitPoints({t, {}}).ok());
    for (int reopen = 0; reopen < 2; ++reopen) {
      Report r = wal->GetReport();
      EXPECT_LE(r.commit_point_ms, t);
      straddled |= r.commit_point_ms < t;
      EXPECT_GE(r.commit_point_ms, last_point) << "the report's point never decreases";
      uint64_t want = 0;
      for (int64_t rt : times) want += rt <= r.commit_point_ms ? 1 : 0;
      EXPECT_EQ(Count(r.at_or_before, "healthy"), want)
          << "exactly the messages received at or before " << r.commit_point_ms;
      EXPECT_EQ(Count(r.at_or_before, "healthy") + Count(r.after, "healthy"), 500u);
      EXPECT_EQ(Count(r.at_or_before, "stuck"), r.commit_point_ms >= kStart ? 1u : 0u);
      EXPECT_EQ(Count(r.at_or_before, "stuck") + Count(r.after, "stuck"), 1u);
      last_point = r.commit_point_ms;
      wal.reset();
      wal = OpenWal();
    }
  }
  EXPECT_TRUE(straddled) << "the case this test is about did occur";
  EXPECT_EQ(wal->GetReport().commit_point_ms, kStart + 1000)
      << "once the commit point passes every bucket, the report is at it again";
}

TEST_F(WalReportBuckets, WithFewBucketsTheReportIsAtTheCommitPoint) {
  auto wal = OpenWal();
  HoldBackAndSettle(wal.get(), 5);
  EXPECT_EQ(wal->GetStats().report_coarsenings, 0u);
  std::vector<Entry> stuck = ScanAll(wal.get());
  ASSERT_TRUE(wal->Settle(Delivered(stuck)).ok());
  ASSERT_TRUE(wal->SaveCommitPoints({kStart + 3, {}}).ok());
  Report r = wal->GetReport();
  EXPECT_EQ(r.commit_point_ms, kStart + 3);
  EXPECT_EQ(Count(r.at_or_before, "healthy"), 3u);
  EXPECT_EQ(Count(r.after, "healthy"), 2u);
}

}  // namespace
}  // namespace kspool::wal
