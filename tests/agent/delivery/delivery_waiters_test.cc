// DeliveryWaiters: WAIT_FOR_KAFKA Sends complete exactly once, with every outcome, even
// when the drain settles their messages before the append has told them their numbers.
#include "agent/delivery/delivery_waiters.h"

#include <gtest/gtest.h>


namespace kspool::agent {
namespace {

struct Captured {
  int calls = 0;
  absl::Status status;
  std::vector<wal::Outcome> got;
};

DeliveryWaiters::Done Capture(Captured* c) {
  return [c](absl::Status s, std::vector<wal::Outcome> got) {
    ++c->calls;
    c->status = std::move(s);
    c->got = std::move(got);
  };
}

wal::Outcome Delivered(uint64_t seq, int32_t partition, int64_t offset) {
  return wal::Outcome::Delivered(seq, "t", partition, offset, /*time_ms=*/5);
}

class DeliveryWaitersTest : public ::testing::Test {
 protected:
  ManualClock clock_{1'700'000'000'000};
  DeliveryWaiters waiters_{&clock_};
};

TEST_F(DeliveryWaitersTest, CompletesWhenEveryMessageHasAnOutcomeInSequenceOrder) {
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  waiters_.Assign(id, 10, 3, 0);
  waiters_.Resolve({Delivered(12, 1, 100), Delivered(10, 0, 7)});
  EXPECT_EQ(c.calls, 0);
  wal::Outcome discarded = wal::Outcome::Discarded(11, "t", "msg_size_too_large", "too big", 5);
  waiters_.Resolve({discarded});
  ASSERT_EQ(c.calls, 1);
  ASSERT_TRUE(c.status.ok());
  ASSERT_EQ(c.got.size(), 3u);
  EXPECT_EQ(c.got[0].seq, 10u);
  EXPECT_EQ(c.got[0].offset, 7);
  EXPECT_EQ(c.got[1].state, wal::Outcome::State::kDiscarded);
  EXPECT_EQ(c.got[1].discard_reason, "msg_size_too_large");
  EXPECT_EQ(c.got[2].partition, 1);
  EXPECT_EQ(c.got[2].offset, 100);
  EXPECT_EQ(waiters_.waiting(), 0u);
}

TEST_F(DeliveryWaitersTest, OutcomesSettledBeforeTheAppendAnsweredAreNotMissed) {
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  // The drain read, produced and settled the entries before the committer thread ran
  // the append's callback.
  waiters_.Resolve({Delivered(20, 2, 40), Delivered(21, 2, 41)});
  EXPECT_EQ(waiters_.kept_outcomes(), 2u);
  waiters_.Assign(id, 20, 2, 0);
  ASSERT_EQ(c.calls, 1);
  EXPECT_EQ(c.got[1].offset, 41);
  EXPECT_EQ(waiters_.kept_outcomes(), 0u);  // nothing kept once no reservation is open
}

TEST_F(DeliveryWaitersTest, KeepsNothingWhileNoReservationIsOpen) {
  waiters_.Resolve({Delivered(1, 0, 1)});
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  waiters_.Resolve({Delivered(2, 0, 2)});
  EXPECT_EQ(waiters_.kept_outcomes(), 1u);  // only what was settled after the reservation
  waiters_.Abandon(id);
  EXPECT_EQ(waiters_.kept_outcomes(), 0u);
  EXPECT_EQ(c.calls, 0);  // an abandoned reservation is not called back
}

TEST_F(DeliveryWaitersTest, DeadlineCompletesOnceWithDeadlineExceeded) {
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  const int64_t deadline = clock_.MonotonicMillis() + 500;
  waiters_.Assign(id, 5, 2, deadline);
  waiters_.Resolve({Delivered(5, 0, 1)});
  waiters_.ExpireDue(deadline - 1);
  EXPECT_EQ(c.calls, 0);
  waiters_.ExpireDue(deadline);
  ASSERT_EQ(c.calls, 1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(c.status));
  waiters_.Resolve({Delivered(6, 0, 2)});  // too late: no second call
  EXPECT_EQ(c.calls, 1);
}

TEST_F(DeliveryWaitersTest, CancelCompletesOnceAndLaterOutcomesAreIgnored) {
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  waiters_.Assign(id, 7, 1, 0);
  waiters_.Cancel(id);
  waiters_.Cancel(id);
  waiters_.Resolve({Delivered(7, 0, 1)});
  ASSERT_EQ(c.calls, 1);
  EXPECT_TRUE(absl::IsCancelled(c.status));
}

TEST_F(DeliveryWaitersTest, TheFirstOutcomeOfAMessageStands) {
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  waiters_.Assign(id, 3, 2, 0);
  waiters_.Resolve({Delivered(3, 0, 30)});
  waiters_.Resolve({Delivered(3, 0, 99), Delivered(4, 0, 31)});
  ASSERT_EQ(c.calls, 1);
  EXPECT_EQ(c.got[0].offset, 30);
}

TEST_F(DeliveryWaitersTest, CloseEndsAssignedWaitersAndThoseAssignedLater) {
  Captured assigned, later;
  const auto a = waiters_.Reserve(Capture(&assigned));
  const auto b = waiters_.Reserve(Capture(&later));
  waiters_.Assign(a, 1, 1, 0);
  waiters_.Close();
  EXPECT_EQ(assigned.calls, 1);
  EXPECT_TRUE(absl::IsUnavailable(assigned.status));
  EXPECT_EQ(later.calls, 0);
  waiters_.Assign(b, 2, 1, 0);
  EXPECT_EQ(later.calls, 1);
  EXPECT_TRUE(absl::IsUnavailable(later.status));
}

// Outcomes come settled (in the WAL's delivery index, which GetDeliveryStatus asks), so
// the waiters keep no copy of an answer.
TEST_F(DeliveryWaitersTest, KeepsNoOutcomeOnceTheWaiterIsAnswered) {
  Captured c;
  const auto id = waiters_.Reserve(Capture(&c));
  waiters_.Assign(id, 40, 1, 0);
  waiters_.Resolve({Delivered(40, 3, 77), Delivered(41, 3, 78)});
  ASSERT_EQ(c.calls, 1);
  ASSERT_EQ(c.got.size(), 1u);
  EXPECT_EQ(c.got[0].offset, 77);
  EXPECT_EQ(waiters_.waiting(), 0u);
  EXPECT_EQ(waiters_.kept_outcomes(), 0u) << "nobody was answered with 41";
  EXPECT_FALSE(waiters_.active());
}

TEST_F(DeliveryWaitersTest, ExpiryThreadEndsAWaiterAtItsDeadline) {
  Clock* clock = SystemClock::Default();
  DeliveryWaiters waiters(clock);
  waiters.StartExpiry();
  std::atomic<int> calls{0};
  const auto id = waiters.Reserve([&calls](absl::Status s, std::vector<wal::Outcome>) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(s));
    calls.fetch_add(1);
  });
  waiters.Assign(id, 1, 1, clock->MonotonicMillis() + 50);
  const int64_t give_up = clock->MonotonicMillis() + 10'000;
  while (calls.load() == 0 && clock->MonotonicMillis() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace kspool::agent
