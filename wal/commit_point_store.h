// wal::CommitPointStore: what the commit tracker needs to derive and publish commit
// points: a bound on the receive times still to come, and a store that keeps published
// points from ever decreasing.
//
// Contract: commit points (SaveCommitPoints) never decrease, also across restarts and
// wall-clock steps, and an idle WAL writes at most one synced batch per
// Options::commit_lease_ms for them (a lease ceiling; FORMAT.md). After a write error
// (LogStatus::health) SaveCommitPoints() fails with UNAVAILABLE until DrainLog::Reopen()
// succeeds. The points saved last are LogStatus::SavedCommitPoints(); the topics to
// publish points for are LogStatus::TrackedTopics().
// Thread safety: every method may be called from any thread. Ownership: borrowed from
// the owner of the wal::Wal.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/log_status.h"
#include "wal/stats.h"

namespace kspool::wal {

class CommitPointStore : public virtual LogStatus {
 public:
  ~CommitPointStore() override = default;

  // The lowest receive time that any entry with seq >= from_seq can have: present,
  // being written, or still to come. Raises the floor of future receive times so that
  // the answer stays true; the commit point is this minus one.
  [[nodiscard]] virtual absl::StatusOr<int64_t> ReceiveTimeBound(uint64_t from_seq) = 0;

  // Makes `points` safe to publish: once it returns OK, no later SavedCommitPoints(),
  // in this process or after a crash and restart, is below them, and future receive
  // times exceed them. A point below the saved one is raised to it (saved points never
  // decrease). A point of a scope (the WAL, or a topic) that has live entries is written
  // (synced) at once; one of a scope with none, up to the persisted lease ceiling, needs
  // no write (an append that gives the scope entries persists it in its own batch, and
  // an Open after a crash starts such scopes at the ceiling). A point past the ceiling
  // raises it, in one synced write with the points. Whenever the global point moves,
  // settled messages received at or before it move into the report's cumulative
  // `at_or_before` counts; that is written in the same batch as the point.
  [[nodiscard]] virtual absl::Status SaveCommitPoints(const CommitPoints& points) = 0;
};

}  // namespace kspool::wal
