#include "agent/drain/commit_tracker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

namespace kspool::agent {

CommitTracker::CommitTracker(wal::CommitPointStore* wal)
    : wal_(wal), published_(wal->SavedCommitPoints()) {}

absl::Status CommitTracker::Update(uint64_t cursor,
                                   const std::map<std::string, int64_t>& window_oldest) {
  absl::StatusOr<int64_t> bound = wal_->ReceiveTimeBound(cursor);
  if (!bound.ok()) return bound.status();
  wal::CommitPoints prev = Current();
  wal::CommitPoints next;
  int64_t oldest = *bound;
  for (const auto& [topic, t] : window_oldest) oldest = std::min(oldest, t);
  next.global_ms = std::max(prev.global_ms, oldest - 1);

  // Only the topics the WAL tracks: one idle long enough is forgotten (its point was
  // saved; a returning topic's receive times stay above it). A topic this tracker has
  // not published starts from the WAL's point for it (a returning topic's first point,
  // above what it published before it was forgotten). One with no such point and no
  // entry in the window gets none yet: its first append is being written (the WAL saves
  // its first point once the write succeeds) or failed (then a reopen decides whether it
  // is tracked). From the receive bound, its point could start below one it published
  // before it was forgotten (drain_sim seed 886404710061, an append that failed on a
  // full volume left its topic tracked through the reopen).
  std::optional<wal::CommitPoints> saved;
  for (const std::string& topic : wal_->TrackedTopics()) {
    auto p = prev.topics_ms.find(topic);
    int64_t prev_ms = 0;
    if (p != prev.topics_ms.end()) {
      prev_ms = p->second;
    } else {
      if (!saved) saved = wal_->SavedCommitPoints();
      auto s = saved->topics_ms.find(topic);
      if (s != saved->topics_ms.end()) {
        prev_ms = s->second;
      } else if (!window_oldest.count(topic)) {
        continue;
      }
    }
    int64_t t = *bound;
    auto it = window_oldest.find(topic);
    if (it != window_oldest.end()) t = std::min(t, it->second);
    next.topics_ms[topic] = std::max(prev_ms, t - 1);
  }
  if (next.global_ms == prev.global_ms && next.topics_ms == prev.topics_ms) {
    return absl::OkStatus();
  }
  if (absl::Status s = wal_->SaveCommitPoints(next); !s.ok()) return s;
  MutexLock l(&mu_);
  published_ = std::move(next);
  return absl::OkStatus();
}

wal::CommitPoints CommitTracker::Current() const {
  MutexLock l(&mu_);
  return published_;
}

}  // namespace kspool::agent
