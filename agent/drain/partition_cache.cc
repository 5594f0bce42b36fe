#include "agent/drain/partition_cache.h"

#include <pthread.h>

#include <algorithm>
#include <iterator>

namespace kspool::agent {

PartitionCache::PartitionCache(LayoutSource source, PartitionCacheOptions options)
    : source_(std::move(source)), options_(options) {
  if (options_.background) thread_ = std::thread([this] { Run(); });
}

PartitionCache::~PartitionCache() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const TopicLayout> PartitionCache::Get(const std::string& topic) {
  const int64_t now = options_.clock->MonotonicMillis();
  bool fetch_inline = false;
  std::shared_ptr<const TopicLayout> layout;
  {
    MutexLock l(&mu_);
    Forget(now);
    Known& k = topics_[topic];
    k.used_ms = now;
    const bool due = k.requested || k.fetched_ms < 0 || now - k.fetched_ms >= options_.refresh_ms;
    if (due && options_.background) {
      cv_.Signal();
    } else if (due) {
      fetch_inline = true;
    }
    layout = k.layout;
  }
  if (!fetch_inline) return layout;
  Fetch(topic);
  MutexLock l(&mu_);
  return topics_[topic].layout;
}

void PartitionCache::RequestRefresh(const std::string& topic) {
  MutexLock l(&mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  it->second.requested = true;
  cv_.Signal();
}

void PartitionCache::Forget(int64_t now_ms) {
  if (now_ms - forgot_ms_ < 1000) return;
  forgot_ms_ = now_ms;
  for (auto it = topics_.begin(); it != topics_.end();) {
    it = now_ms - it->second.used_ms > options_.forget_ms ? topics_.erase(it) : std::next(it);
  }
}

std::vector<std::string> PartitionCache::Due(int64_t now_ms) {
  Forget(now_ms);
  std::vector<std::pair<int64_t, std::string>> due;
  for (const auto& [name, k] : topics_) {
    if (k.requested || k.fetched_ms < 0 || now_ms - k.fetched_ms >= options_.refresh_ms) {
      due.emplace_back(k.requested ? -1 : k.fetched_ms, name);
    }
  }
  std::sort(due.begin(), due.end());
  std::vector<std::string> names;
  for (auto& [at, name] : due) names.push_back(std::move(name));
  return names;
}

void PartitionCache::Fetch(const std::string& topic) {
  absl::StatusOr<std::vector<bool>> leaders = source_(topic);
  const int64_t now = options_.clock->MonotonicMillis();
  MutexLock l(&mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;  // forgotten meanwhile
  Known& k = it->second;
  auto next = std::make_shared<TopicLayout>();
  next->generation = k.layout->generation + 1;
  if (leaders.ok()) {
    next->status = absl::OkStatus();
    next->leaders = std::move(leaders).value();
  } else {
    next->status = leaders.status();
    // Keep the last known partitions: an unreachable cluster does not mean the topic
    // has none, and routing by the old layout is what the client would do too.
    next->leaders = k.layout->leaders;
  }
  k.layout = std::move(next);
  k.fetched_ms = now;
  k.requested = false;
}

void PartitionCache::Run() {
  pthread_setname_np(pthread_self(), "kspool-metadata");
  while (true) {
    std::vector<std::string> due;
    {
      MutexLock l(&mu_);
      if (stop_) return;
      due = Due(options_.clock->MonotonicMillis());
      if (due.empty()) {
        cv_.WaitFor(&mu_, std::chrono::milliseconds(std::max<int64_t>(options_.refresh_ms / 4, 10)));
        continue;
      }
    }
    for (const std::string& topic : due) {
      Fetch(topic);
      MutexLock l(&mu_);
      if (stop_) return;
    }
  }
}

}  // namespace kspool::agent
