// PartitionCache: layouts come from a background thread, so a slow metadata answer
// never holds up the caller (the drain loop); refreshes are asked for and bounded.
#include "agent/drain/partition_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace kspool::agent {
namespace {

TEST(PartitionCache, GetNeverWaitsForASlowMetadataAnswer) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> asked{0};
  PartitionCache cache(
      [&](const std::string&) -> absl::StatusOr<std::vector<bool>> {
        ++asked;
        std::unique_lock<std::mutex> l(mu);
        cv.wait_for(l, std::chrono::seconds(20), [&] { return release; });
        return std::vector<bool>{true, false};
      },
      PartitionCacheOptions{});
  // The cluster does not answer; Get still returns at once, with "no metadata yet".
  std::shared_ptr<const TopicLayout> first = cache.Get("t");
  EXPECT_TRUE(absl::IsUnavailable(first->status));
  EXPECT_EQ(first->generation, 0u);
  bool released_before_get_returned;
  {
    std::lock_guard<std::mutex> l(mu);
    released_before_get_returned = release;
    release = true;
  }
  cv.notify_all();
  EXPECT_FALSE(released_before_get_returned);
  std::shared_ptr<const TopicLayout> later;
  for (int i = 0; i < 2000; ++i) {
    later = cache.Get("t");
    if (later->generation > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(later->generation, 1u);
  EXPECT_TRUE(later->status.ok());
  EXPECT_TRUE(later->HasLeader(0));
  EXPECT_FALSE(later->HasLeader(1));
  EXPECT_GE(asked.load(), 1);
}

TEST(PartitionCache, RefreshesWhenAskedOrStaleAndKeepsPartitionsWhenTheClusterIsUnreachable) {
  ManualClock clock(1'000'000);
  int calls = 0;
  bool reachable = true;
  PartitionCacheOptions o;
  o.background = false;
  o.refresh_ms = 1000;
  o.clock = &clock;
  PartitionCache cache(
      [&](const std::string&) -> absl::StatusOr<std::vector<bool>> {
        ++calls;
        if (!reachable) return absl::UnavailableError("no broker");
        return std::vector<bool>{true, true, true};
      },
      o);
  EXPECT_EQ(cache.Get("t")->generation, 1u);
  EXPECT_EQ(cache.Get("t")->generation, 1u);  // fresh: not asked again
  EXPECT_EQ(calls, 1);
  cache.RequestRefresh("t");
  EXPECT_EQ(cache.Get("t")->generation, 2u);
  reachable = false;
  clock.Advance(1000);
  std::shared_ptr<const TopicLayout> l = cache.Get("t");
  EXPECT_EQ(l->generation, 3u);
  EXPECT_TRUE(absl::IsUnavailable(l->status));
  EXPECT_EQ(l->partition_count(), 3);  // the last known partitions are kept
}

TEST(PartitionCache, ForgetsTopicsNobodyAsksAbout) {
  ManualClock clock(1'000'000);
  int calls = 0;
  PartitionCacheOptions o;
  o.background = false;
  o.refresh_ms = 1'000'000;
  o.forget_ms = 60'000;
  o.clock = &clock;
  PartitionCache cache(
      [&](const std::string&) -> absl::StatusOr<std::vector<bool>> {
        ++calls;
        return std::vector<bool>{true};
      },
      o);
  cache.Get("old");
  clock.Advance(60'001);
  cache.Get("new");             // drops "old", not asked about for a minute
  cache.RequestRefresh("old");  // unknown now: nothing to refresh
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.Get("old")->generation, 1u);  // known afresh
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace kspool::agent
