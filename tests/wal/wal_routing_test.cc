// Routing bounds (wal/routing_bounds.h): the rule that says how few partitions a keyed
// entry may have been produced with, and how the WAL keeps them: synced, across reopens,
// pruned below the head, refused after a write error, forgotten with an idle topic.
#include <gtest/gtest.h>

#include "tests/support/fault_fs.h"
#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/routing_bounds.h"

namespace kspool::wal {
namespace {

constexpr int64_t kMinute = 60'000;

TEST(RoutingBounds, AnEntryMayHaveTheLowestCountOfItsPairAndEveryLaterOne) {
  const std::vector<RoutingBound> bounds = {{10, 4}, {20, 8}, {30, 2}, {40, 6}};
  EXPECT_EQ(LowestRoutedCount(bounds, 5), 1) << "below the first pair nothing is known";
  EXPECT_EQ(LowestRoutedCount(bounds, 10), 2) << "produced again after the count fell to 2";
  EXPECT_EQ(LowestRoutedCount(bounds, 35), 2);
  EXPECT_EQ(LowestRoutedCount(bounds, 40), 6);
  EXPECT_EQ(LowestRoutedCount({}, 7), 1);
}

TEST(RoutingBounds, PairsBeforeTheOneHoldingTheHeadAreDropped) {
  std::vector<RoutingBound> bounds = {{10, 4}, {20, 8}};
  AddRoutingBound(&bounds, {30, 16}, /*head=*/25);
  EXPECT_EQ(bounds, (std::vector<RoutingBound>{{20, 8}, {30, 16}}));
  AddRoutingBound(&bounds, {5, 32}, /*head=*/25);  // never before the last pair
  EXPECT_EQ(bounds.back(), (RoutingBound{30, 32}));
  for (int i = 0; i < 100; ++i) AddRoutingBound(&bounds, {100u + i, 64 + i}, /*head=*/0);
  EXPECT_EQ(bounds.size(), kMaxRoutingBounds);
  EXPECT_EQ(bounds.front().from_seq, 20u) << "merged pairs start where the oldest did";
  EXPECT_EQ(bounds.front().partitions, 8) << "and claim the lower count";
}

TEST(RoutingBounds, AValueThatIsNotAListOfPairsIsDataLossNamingTheKey) {
  absl::StatusOr<std::vector<RoutingBound>> b = DecodeRoutingBounds("routing/t", "short");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(b.status().message().find("routing/t"), std::string::npos) << b.status();
  EXPECT_EQ(DecodeRoutingBounds("routing/t", std::string(12, '\0')).status().code(),
            absl::StatusCode::kDataLoss)
      << "a count of 0";
  const std::vector<RoutingBound> ok = {{1, 3}, {9, 5}};
  EXPECT_EQ(*DecodeRoutingBounds("routing/t", EncodeRoutingBounds(ok)), ok);
}

class WalRouting : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    o.topic_idle_forget_ms = 60 * kMinute;
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

TEST_F(WalRouting, SavedBoundsSurviveAReopenAndThoseBelowTheHeadGo) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "v")).ok());
    ASSERT_TRUE(wal->SaveRoutingBound("t", {1, 2}).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    ASSERT_TRUE(wal->Settle(Delivered({e.begin(), e.begin() + 6})).ok());  // head 7
    ASSERT_TRUE(wal->SaveRoutingBound("t", {5, 4}).ok());
    absl::StatusOr<std::vector<RoutingBound>> saved = wal->SaveRoutingBound("t", {9, 8});
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_EQ(*saved, (std::vector<RoutingBound>{{5, 4}, {9, 8}}));
  }
  auto wal = OpenWal();
  absl::StatusOr<std::vector<RoutingBound>> read = wal->RoutingBounds("t");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, (std::vector<RoutingBound>{{5, 4}, {9, 8}}));
  EXPECT_TRUE(wal->RoutingBounds("other")->empty());
}

TEST_F(WalRouting, AFailedSyncRefusesUntilReopenedAndLeavesTheOldOrTheNewBounds) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->SaveRoutingBound("t", {1, 2}).ok());
  fs_->FailNextSyncs(1);
  absl::StatusOr<std::vector<RoutingBound>> s = wal->SaveRoutingBound("t", {1, 4});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
  EXPECT_FALSE(wal->health().ok()) << "a failed sync is sticky";
  EXPECT_EQ(wal->SaveRoutingBound("t", {1, 4}).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(wal->Reopen().ok());
  // A failed sync may or may not have kept the write; either answer is whole (the pair
  // from the same sequence number replaces the older one).
  const std::vector<RoutingBound> after = *wal->RoutingBounds("t");
  EXPECT_TRUE(after == (std::vector<RoutingBound>{{1, 2}}) ||
              after == (std::vector<RoutingBound>{{1, 4}}))
      << after.size() << " pairs, the first for " << after.at(0).partitions;
  ASSERT_TRUE(wal->SaveRoutingBound("t", {1, 4}).ok());
}

TEST_F(WalRouting, AnIdleTopicForgottenLosesItsBounds) {
  auto wal = OpenWal();
  absl::StatusOr<AppendResult> r = wal->Append(MakeBatch("idle", 2, "v"));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(wal->SaveRoutingBound("idle", {r->first_seq, 3}).ok());
  ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
  clock_.Advance(61 * kMinute);
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(*gone, std::vector<std::string>{"idle"});
  EXPECT_TRUE(wal->RoutingBounds("idle")->empty());
}

TEST_F(WalRouting, AStoredValueThatDoesNotParseIsReportedAndReplacedOnTheNextSave) {
  { auto wal = OpenWal(); }
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db, auto& cf) {
                return db->Put({}, cf.at("meta"), "routing/t", "garbage");
              }).ok());
  auto wal = OpenWal();
  EXPECT_EQ(wal->RoutingBounds("t").status().code(), absl::StatusCode::kDataLoss);
  absl::StatusOr<std::vector<RoutingBound>> saved = wal->SaveRoutingBound("t", {4, 2});
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, (std::vector<RoutingBound>{{4, 2}}))
      << "nothing is claimed below 4: any count from 1";
}

}  // namespace
}  // namespace kspool::wal
