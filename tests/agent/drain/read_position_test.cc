// ReadPosition: the reader's cursor across passes, failed scans and WAL reopens, and
// the guarantee its Check states (no window entry at or above the horizon).
#include "agent/drain/read_position.h"

#include <gtest/gtest.h>

namespace kspool::agent {
namespace {

TEST(ReadPosition, AReopenRewindsToTheFailedWritesAndKeepsTheOldCursorAsTheRecheckBound) {
  ReadPosition r;
  r.Start(3);
  r.Passed(100);
  EXPECT_FALSE(r.Reopened(3, 40)) << "no reopen since the start";
  EXPECT_EQ(r.cursor(), 100u);
  ASSERT_TRUE(r.Reopened(4, 90));
  EXPECT_EQ(r.cursor(), 90u);
  EXPECT_TRUE(r.MayBeTaken(95));
  EXPECT_FALSE(r.MayBeTaken(100));
  EXPECT_EQ(r.Horizon(), 100u);
  EXPECT_FALSE(r.Reopened(4, 10)) << "seen already";
  r.Passed(95);
  EXPECT_EQ(r.cursor(), 95u);
}

TEST(ReadPosition, TwoReopensUnseenRewindToTheHead) {
  ReadPosition r;
  r.Start(0);
  r.Passed(100);
  ASSERT_TRUE(r.Reopened(2, 90));  // the first one's failed writes may begin lower
  EXPECT_EQ(r.cursor(), 0u);
  EXPECT_TRUE(r.MayBeTaken(99));
}

TEST(ReadPosition, AFailedScansTakenEntriesAreLookedUpByTheNextScan) {
  ReadPosition r;
  r.Passed(10);
  r.TakenUpTo(14);  // the scan failed reporting next 10, after taking 10..14
  r.Passed(10);
  EXPECT_TRUE(r.MayBeTaken(14));
  EXPECT_FALSE(r.MayBeTaken(15));
  EXPECT_TRUE(r.Check(false, 14).ok());
}

TEST(ReadPosition, CheckRefusesAWindowEntryAtOrAboveTheHorizon) {
  ReadPosition r;
  r.Passed(10);
  EXPECT_TRUE(r.Check(true, 0).ok());
  EXPECT_TRUE(r.Check(false, 9).ok());
  absl::Status s = r.Check(false, 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("horizon 10"), std::string::npos) << s;
}

}  // namespace
}  // namespace kspool::agent
