// wal::LogStatus: what every user of the WAL may ask of it, answered from memory
// without I/O: whether it accepts writes, its identity, its counters, its commit points
// and the topics it tracks.
//
// Every narrow interface of the WAL (append_log.h, drain_log.h, commit_point_store.h,
// maintenance.h, inspection.h) inherits it virtually, so that the aggregate wal::Wal
// holds it once and a caller holding any one of them can read the log's state.
// Thread safety: every method may be called from any thread. Ownership: the WAL is owned
// by whoever opened it (wal::Wal::Open); holders of an interface only borrow it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "wal/stats.h"

namespace kspool::wal {

class LogStatus {
 public:
  virtual ~LogStatus() = default;

  // Sticky write error, OK while healthy. After a failed write or sync, every later
  // append, Settle() and SaveCommitPoints() fails with UNAVAILABLE until
  // DrainLog::Reopen() succeeds: the state after a failed sync is unknown (RocksDB may
  // or may not have kept the batch).
  virtual absl::Status health() const = 0;
  // Set when the WAL was first created; never changes, also across Reopen().
  virtual std::string agent_id() const = 0;
  virtual Stats GetStats() const = 0;
  // The commit points saved last (CommitPointStore::SaveCommitPoints). After an Open: at
  // or above every point published before (possibly by an earlier process), and still
  // valid; after a crash, scopes without live entries start at the lease ceiling.
  virtual CommitPoints SavedCommitPoints() const = 0;
  // Topics whose commit points are tracked: every topic with live entries, or an
  // append in the last Options::topic_idle_forget_ms, or a saved commit point.
  virtual std::vector<std::string> TrackedTopics() const = 0;
};

}  // namespace kspool::wal
