#include "agent/api/request_memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace kspool::agent {
namespace {

TEST(RequestMemoryBudget, RefusesAChargeBeyondTheBoundAndChargesNothingThen) {
  RequestMemoryBudget budget(100);
  absl::StatusOr<RequestMemoryBudget::Lease> a = budget.Charge(60);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<RequestMemoryBudget::Lease> b = budget.Charge(41);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b.status().message(),
            "receive memory full (60 of 100 bytes in use; the request needs 41)");
  EXPECT_EQ(budget.in_use(), 60u);
  EXPECT_TRUE(budget.Charge(40).ok()) << "exactly up to the bound is fine";
}

TEST(RequestMemoryBudget, ARequestLargerThanTheBoundIsRefusedEvenWhenIdle) {
  RequestMemoryBudget budget(100);
  EXPECT_FALSE(budget.Charge(101).ok());
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(RequestMemoryBudget, FreesTheChargeWhenTheLeaseIsReleased) {
  RequestMemoryBudget budget(100);
  {
    absl::StatusOr<RequestMemoryBudget::Lease> a = budget.Charge(100);
    ASSERT_TRUE(a.ok());
    RequestMemoryBudget::Lease moved = std::move(*a);  // moving does not free twice
    EXPECT_EQ(budget.in_use(), 100u);
    EXPECT_FALSE(budget.Charge(1).ok());
    moved = {};
    EXPECT_EQ(budget.in_use(), 0u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_TRUE(budget.Charge(100).ok());
}

TEST(RequestMemoryBudget, ZeroBoundCountsButNeverRefuses) {
  RequestMemoryBudget budget(0);
  absl::StatusOr<RequestMemoryBudget::Lease> a = budget.Charge(uint64_t{1} << 40);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(budget.in_use(), uint64_t{1} << 40);
  EXPECT_EQ(budget.bound(), 0u);
}

TEST(RequestMemoryBudget, ConcurrentChargesNeverPassTheBound) {
  RequestMemoryBudget budget(1000);
  std::atomic<uint64_t> peak{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        absl::StatusOr<RequestMemoryBudget::Lease> lease = budget.Charge(300);
        if (!lease.ok()) continue;
        uint64_t seen = budget.in_use();
        uint64_t p = peak.load();
        while (seen > p && !peak.compare_exchange_weak(p, seen)) {
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(peak.load(), 1000u);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(RequestMemoryBudget, ARefusalNamesTheBudget) {
  RequestMemoryBudget budget(100, "waiting memory");
  absl::StatusOr<RequestMemoryBudget::Lease> a = budget.Charge(101);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(),
            "waiting memory full (0 of 100 bytes in use; the request needs 101)");
}

TEST(RequestMemoryBudget, AResizedLeasePassesTheBoundAndHoldsBackLaterCharges) {
  RequestMemoryBudget budget(1000);
  absl::StatusOr<RequestMemoryBudget::Lease> a = budget.Charge(600);
  ASSERT_TRUE(a.ok());
  a->Resize(1200);  // the answer turned out larger than its estimate: it exists anyway
  EXPECT_EQ(budget.in_use(), 1200u);
  EXPECT_FALSE(budget.Charge(1).ok()) << "nothing more fits until it is given back";
  a->Resize(100);
  EXPECT_EQ(budget.in_use(), 100u);
  EXPECT_TRUE(budget.Charge(900).ok());
  RequestMemoryBudget::Lease moved = std::move(*a);
  EXPECT_EQ(moved.bytes(), 100u);
  a->Resize(5000);  // empty after the move: charges nothing
  EXPECT_EQ(budget.in_use(), 100u);
  moved = {};
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace kspool::agent
