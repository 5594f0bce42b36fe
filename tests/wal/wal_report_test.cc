// The discard report's counts, split at the commit point.
#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

class WalReport : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    return std::move(Wal::Open(o)).value();
  }
  Outcome Discarded(const Entry& e, const std::string& reason) {
    return SettleDiscarded(e.seq, e.record.topic, e.size, reason, "err", EncodeRecord(e.record),
                           e.record.receive_time_ms);
  }
  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000};
};

TEST_F(WalReport, SettledMessagesMoveIntoTheCumulativeCountsAsTheCommitPointPasses) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("t", 3, "a")).ok());  // received at 1'000'000
  clock_.Set(1'000'010);
  ASSERT_TRUE(wal->Append(MakeBatch("t", 2, "b")).ok());  // received at 1'000'010
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[2]})).ok());
  ASSERT_TRUE(wal->Settle({Discarded(e[3], "expired")}).ok());

  Report r = wal->GetReport();
  EXPECT_TRUE(r.at_or_before.empty()) << "no commit point saved yet";
  EXPECT_EQ(r.after["t"]["delivered"].count, 3u);
  EXPECT_EQ(r.after["t"]["expired"].count, 1u) << "a discard is visible at once";

  ASSERT_TRUE(wal->SaveCommitPoints({1'000'009, {}}).ok());
  r = wal->GetReport();
  EXPECT_EQ(r.commit_point_ms, 1'000'009);
  EXPECT_EQ(r.at_or_before["t"]["delivered"].count, 3u);
  EXPECT_EQ(r.at_or_before["t"]["delivered"].min_receive_ms, 1'000'000);
  EXPECT_EQ(r.after["t"].count("delivered"), 0u);
  EXPECT_EQ(r.after["t"]["expired"].count, 1u);
  EXPECT_EQ(r.after["t"]["expired"].min_receive_ms, 1'000'010);

  ASSERT_TRUE(wal->Settle(Delivered({e[4]})).ok());
  ASSERT_TRUE(wal->SaveCommitPoints({1'000'050, {}}).ok());
  r = wal->GetReport();
  EXPECT_EQ(r.at_or_before["t"]["delivered"].count, 4u);
  EXPECT_EQ(r.at_or_before["t"]["delivered"].max_receive_ms, 1'000'010);
  EXPECT_EQ(r.at_or_before["t"]["expired"].count, 1u);
  EXPECT_TRUE(r.after.empty() || r.after["t"].empty());
  EXPECT_EQ(r.ledger["t"].accepted.count, 5u);
  EXPECT_EQ(r.ledger["t"].pending().count, 0u);
}

TEST_F(WalReport, TheSplitSurvivesReopen) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("t", 2, "a")).ok());
    clock_.Set(1'000'100);
    ASSERT_TRUE(wal->Append(MakeBatch("u", 2, "b")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[3]})).ok());
    ASSERT_TRUE(wal->SaveCommitPoints({1'000'050, {}}).ok());
  }
  auto wal = OpenWal();
  Report r = wal->GetReport();
  EXPECT_EQ(r.commit_point_ms, 1'000'050);
  EXPECT_EQ(r.at_or_before["t"]["delivered"].count, 2u);
  EXPECT_EQ(r.after["u"]["delivered"].count, 1u);
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 1u);
  ASSERT_TRUE(wal->Settle(Delivered(e)).ok());
  ASSERT_TRUE(wal->SaveCommitPoints({1'000'200, {}}).ok());
  r = wal->GetReport();
  EXPECT_EQ(r.at_or_before["u"]["delivered"].count, 2u);
  EXPECT_EQ(r.at_or_before["t"]["delivered"].count, 2u);
}

}  // namespace
}  // namespace kspool::wal
