#include "base/periodic_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kspool {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(PeriodicThread, RunsTheTaskOncePerInterval) {
  std::atomic<int> runs{0};
  PeriodicThread t;
  t.Start("test-periodic", milliseconds(1), [&] { runs++; });
  const auto deadline = steady_clock::now() + std::chrono::seconds(10);
  while (runs.load() < 3 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  t.Stop();
  EXPECT_GE(runs.load(), 3);
  const int after_stop = runs.load();
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(runs.load(), after_stop) << "no run after Stop()";
}

TEST(PeriodicThread, StopEndsTheWaitAtOnce) {
  std::atomic<int> runs{0};
  PeriodicThread t;
  t.Start("test-periodic", std::chrono::hours(1), [&] { runs++; });
  const auto start = steady_clock::now();
  t.Stop();
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(runs.load(), 0) << "the first run comes after one interval";
}

TEST(PeriodicThread, StopLetsARunningTaskFinish) {
  std::atomic<bool> started{false}, finished{false};
  PeriodicThread t;
  t.Start("test-periodic", milliseconds(1), [&] {
    if (started.exchange(true)) return;
    std::this_thread::sleep_for(milliseconds(50));
    finished = true;
  });
  while (!started.load()) std::this_thread::sleep_for(milliseconds(1));
  t.Stop();
  EXPECT_TRUE(finished.load());
}

TEST(PeriodicThread, StopWithoutStartAndTwiceIsANoOp) {
  PeriodicThread never;
  never.Stop();
  PeriodicThread twice;
  twice.Start("test-periodic", milliseconds(1), [] {});
  twice.Stop();
  twice.Stop();
}

}  // namespace
}  // namespace kspool
