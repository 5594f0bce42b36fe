// CommitTracker: derives and publishes the commit points (ARCHITECTURE.md invariant 4).
//
// T = (receive time of the oldest entry still in the WAL) - 1 ms, or the current time
// when the WAL is empty; per topic, the same over that topic's entries. Published
// points never decrease, also across restarts: each is saved (Wal::SaveCommitPoints)
// before it is published, and the WAL keeps future receive times above every saved
// point. Saving writes only when needed: the points of an idle WAL ("now") move under
// the WAL's lease ceiling, so an idle agent syncs at most once per lease (10 s).
// Thread safety: Update() from one thread (the drain loop); Current() from any.
#pragma once

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "wal/commit_point_store.h"

namespace kspool::agent {

class CommitTracker {
 public:
  explicit CommitTracker(wal::CommitPointStore* wal);

  // `window_oldest`: per topic, the oldest receive time among entries below `cursor`
  // that are still in the WAL. Entries at or above `cursor` are the WAL's to bound.
  [[nodiscard]] absl::Status Update(uint64_t cursor,
                                    const std::map<std::string, int64_t>& window_oldest);

  wal::CommitPoints Current() const;

 private:
  wal::CommitPointStore* const wal_;
  mutable Mutex mu_;
  wal::CommitPoints published_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kspool::agent
