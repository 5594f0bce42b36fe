// Settler: which finished entries go out in a settle, and what a failed one leaves.
#include "agent/drain/settler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::agent {
namespace {

class SettlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    wal::Options o;
    o.dir = dir_.sub("wal");
    o.clock = &clock_;
    auto w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    wal_ = std::move(w).value();
    ASSERT_TRUE(wal_->Append(wal::MakeBatch("t", 4, "v")).ok());
    std::vector<wal::Entry> entries;
    ASSERT_TRUE(wal_->Scan(0, 100, 1u << 20, &entries).ok());
    ASSERT_EQ(entries.size(), 4u);
    for (wal::Entry& e : entries) {
      seqs_.push_back(e.seq);
      bool fresh = false;
      window_.Admit(window_.end(), std::move(e), topics_["t"].window, false, &fresh);
    }
  }
  // Finishes the i-th entry at `now` as delivered to partition 0 at `offset`.
  void Deliver(Settler& settler, size_t i, int64_t offset, int64_t now) {
    Slot& slot = window_.at(seqs_[i]);
    Settler::KeepDelivered(slot, 0, offset, clock_.NowMillis(), true);
    settler.Finished(seqs_[i], slot, now);
  }
  absl::Status Settle(Settler& settler, int64_t now, bool all = false) {
    return settler.Settle(
        window_, now, all, [](std::vector<wal::Outcome>*) {},
        [&](DrainWindow::iterator it) { window_.Erase(it, topics_["t"].window); });
  }
  std::vector<uint64_t> InWindow() const {
    std::vector<uint64_t> out;
    for (const auto& [seq, slot] : window_) out.push_back(seq);
    return out;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'800'000'000'000};
  std::unique_ptr<wal::Wal> wal_;
  DrainWindow window_;
  std::map<std::string, TopicState, std::less<>> topics_;
  std::vector<uint64_t> seqs_;
};

TEST_F(SettlerTest, ThePrefixGoesAtOnceAndAnEntryFinishedOutOfOrderWaitsItsDelay) {
  Settler settler(wal_.get(), {/*settle_delay_ms=*/50, /*settle_interval_ms=*/0, nullptr});
  Deliver(settler, 0, 10, 1000);
  Deliver(settler, 2, 12, 1000);  // out of order: entry 1 is not finished
  ASSERT_TRUE(Settle(settler, 1000).ok());
  EXPECT_EQ(InWindow(), (std::vector<uint64_t>{seqs_[1], seqs_[2], seqs_[3]}));
  ASSERT_TRUE(Settle(settler, 1049).ok());
  EXPECT_EQ(InWindow(), (std::vector<uint64_t>{seqs_[1], seqs_[2], seqs_[3]}));
  ASSERT_TRUE(Settle(settler, 1050).ok());
  EXPECT_EQ(InWindow(), (std::vector<uint64_t>{seqs_[1], seqs_[3]}));
  EXPECT_TRUE(settler.Check(window_).ok()) << settler.Check(window_);
  std::vector<wal::Entry> live;
  ASSERT_TRUE(wal_->Scan(0, 100, 1u << 20, &live).ok());
  EXPECT_EQ(live.size(), 2u) << "what left the window left the WAL";
}

// The prefix settles offset 20 of partition 0; an entry delivered there at offset 15,
// finished too recently to go on its own, goes with it: a watermark raised to 20 alone
// would pass a copy the WAL still holds as unsettled.
TEST_F(SettlerTest, ADeliveryBelowAnOffsetTheBatchSettlesGoesInTheSameBatch) {
  Settler settler(wal_.get(), {/*settle_delay_ms=*/50, /*settle_interval_ms=*/0, nullptr});
  Deliver(settler, 0, 20, 1000);
  Deliver(settler, 2, 15, 1000);
  Deliver(settler, 3, 25, 1000);
  ASSERT_TRUE(Settle(settler, 1000).ok());
  EXPECT_EQ(InWindow(), (std::vector<uint64_t>{seqs_[1], seqs_[3]}))
      << "offset 15 joined the batch, offset 25 waits its delay";
}

TEST_F(SettlerTest, AFailedSettleLeavesEveryOutcomeInItsSlotAsItWas) {
  // A read-only view of the same WAL refuses every settle.
  wal_.reset();
  wal::Options o;
  o.dir = dir_.sub("wal");
  o.clock = &clock_;
  o.read_only = true;
  auto ro = wal::Wal::Open(o);
  ASSERT_TRUE(ro.ok()) << ro.status();
  Settler settler(ro->get(), {/*settle_delay_ms=*/0, /*settle_interval_ms=*/0, nullptr});
  Deliver(settler, 0, 7, 1000);
  Settler::Store(seqs_[1], window_.at(seqs_[1]),
                 wal::Outcome::Discarded(seqs_[1], "t", "expired", "too old"));
  settler.Finished(seqs_[1], window_.at(seqs_[1]), 1000);
  EXPECT_FALSE(Settle(settler, 2000, /*all=*/true).ok());
  EXPECT_EQ(window_.size(), 4u);
  EXPECT_TRUE(settler.Check(window_).ok()) << settler.Check(window_);
  wal::Outcome delivered = Settler::Take(seqs_[0], window_.at(seqs_[0]));
  EXPECT_TRUE(delivered.delivered());
  EXPECT_EQ(delivered.offset, 7);
  wal::Outcome discarded = Settler::Take(seqs_[1], window_.at(seqs_[1]));
  EXPECT_EQ(discarded.discard_reason, "expired");
  EXPECT_EQ(discarded.error, "too old");
}

}  // namespace
}  // namespace kspool::agent
