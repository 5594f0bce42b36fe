// KafkaReconciler's queue: a newer ReconcileAgain round of a topic replaces one still
// queued instead of piling up behind the workers. The scanner factory fails on purpose
// (no Kafka needed): each job it takes then answers at once, "unreadable".
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "agent/kafka/kafka_reconciler.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::agent {
namespace {

TEST(KafkaReconcilerRounds, ANewerRoundReplacesOneStillQueued) {
  kspool::testing::TempDir dir;
  wal::Options wo;
  wo.dir = dir.sub("wal");
  auto wal = wal::Wal::Open(wo);
  ASSERT_TRUE(wal.ok()) << wal.status();
  std::atomic<bool> release{false};
  std::atomic<int> made{0};
  auto factory = [&]() -> absl::StatusOr<std::unique_ptr<PartitionScanner>> {
    // The first job holds the only worker until the test has queued its rounds.
    if (made.fetch_add(1) == 0) {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return absl::UnavailableError("no Kafka in this test");
  };
  ReconcilerOptions o;
  o.workers = 1;
  KafkaReconciler r(factory, wal->get(), /*partitions=*/nullptr, "agent", o, SystemClock::Default(),
                    nullptr);
  r.Reconcile("a", 1000);
  while (made.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  r.ReconcileAgain("b", 3000, 2);
  r.ReconcileAgain("b", 2000, 3);
  r.ReconcileAgain("b", 4000, 4);
  r.ReconcileAgain("c", 5000, 5);
  release = true;
  std::vector<ReconcileResult> results;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (results.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    r.Poll(&results);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // nothing more comes
  r.Poll(&results);
  ASSERT_EQ(results.size(), 3u);
  std::map<std::string, uint64_t> round_of;
  for (const ReconcileResult& x : results) {
    EXPECT_TRUE(x.all_released);
    EXPECT_EQ(x.ended_early, "unreadable");
    round_of[x.topic] = x.round;
  }
  EXPECT_EQ(round_of["a"], 0u);
  EXPECT_EQ(round_of["b"], 4u) << "rounds 2 and 3 were replaced by round 4";
  EXPECT_EQ(round_of["c"], 5u);
  EXPECT_EQ(made.load(), 3) << "one read per topic";
}

}  // namespace
}  // namespace kspool::agent
