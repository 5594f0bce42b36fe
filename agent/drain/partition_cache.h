// PartitionCache: the drain loop's view of each topic's partitions (how many there are,
// which have a leader), refreshed in the background, so that a slow or failing metadata
// request never stalls delivery, of that topic or of any other (ARCHITECTURE.md invariant 7).
// A topic nobody asked about for `forget_ms` is dropped: memory is bounded by the topics
// in use, not by every topic ever seen.
// Thread safety: every method may be called from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "base/clock.h"
#include "base/mutex.h"

namespace kspool::agent {

struct TopicLayout {
  // OK; NOT_FOUND when the cluster says the topic does not exist; else UNAVAILABLE
  // (never asked yet, or the cluster could not be asked).
  absl::Status status = absl::UnavailableError("no metadata yet");
  // Per partition id: has a leader. After a failed lookup, as the last answer said (the
  // drain keeps routing by them, so a key keeps its partition and its order).
  std::vector<bool> leaders;
  uint64_t generation = 0;    // answers received for this topic so far
  int partition_count() const { return static_cast<int>(leaders.size()); }
  bool HasLeader(int32_t p) const {
    return p >= 0 && p < partition_count() && leaders[static_cast<size_t>(p)];
  }
};

// One blocking metadata request: per partition id, whether it has a leader.
using LayoutSource = std::function<absl::StatusOr<std::vector<bool>>(const std::string& topic)>;

struct PartitionCacheOptions {
  int64_t refresh_ms = 1000;    // how old a layout may get while the topic is in use
  int64_t forget_ms = 300'000;  // drop topics not asked about for this long
  // false: no thread; Get() fetches inline when a refresh is due (deterministic tests).
  bool background = true;
  Clock* clock = SystemClock::Default();
};

class PartitionCache {
 public:
  PartitionCache(LayoutSource source, PartitionCacheOptions options);
  ~PartitionCache();

  // The latest layout of `topic` (never null). In background mode this never blocks; it
  // asks for a refresh when the layout is older than refresh_ms.
  std::shared_ptr<const TopicLayout> Get(const std::string& topic);
  // Asks for a fresh look at `topic` as soon as possible (after a produce error).
  void RequestRefresh(const std::string& topic);

 private:
  struct Known {
    std::shared_ptr<const TopicLayout> layout = std::make_shared<TopicLayout>();
    int64_t fetched_ms = -1;  // monotonic; -1: never
    int64_t used_ms = 0;
    bool requested = false;
  };
  // Topics due for a fetch, oldest first.
  std::vector<std::string> Due(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops topics not asked about for forget_ms (at most once a second).
  void Forget(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Fetch(const std::string& topic) ABSL_LOCKS_EXCLUDED(mu_);
  void Run();

  const LayoutSource source_;
  const PartitionCacheOptions options_;
  Mutex mu_;
  CondVar cv_;
  std::map<std::string, Known> topics_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t forgot_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace kspool::agent
