// CommitLease: the WAL's commit points and their lease (FORMAT.md, "Commit points and
// their lease"): the points safe to publish (saved), those durable in the log, and the
// persisted ceiling up to which points of scopes without live entries may move without
// a write. A component of RocksWal (rocks_wal_commit_points.cc has the why).
//
// It decides and remembers; RocksWal writes. What a batch makes durable is taken over
// (Written, NoteDurable) only once the batch is written.
// Thread safety: none of its own; RocksWal holds it under its mu_.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "wal/stats.h"

namespace kspool::wal {

// Commit points, scope by scope the higher of the two; the highest point of any scope.
CommitPoints MaxOf(const CommitPoints& a, const CommitPoints& b);
int64_t HighestPoint(const CommitPoints& p);

class CommitLease {
 public:
  // Published-safe points: persisted, or leased under the ceiling.
  const CommitPoints& saved() const { return saved_; }
  // What is durable in `commit_point_ms*` and `leased_point_ms*` together.
  const CommitPoints& durable() const { return durable_; }
  int64_t ceiling_ms() const { return ceiling_ms_; }  // 0: none persisted

  // True if the lease lets `next` be published without a write, as far as the points
  // go: every point that moves belongs to a scope with no live entries (by `ledger`),
  // stays at or below the ceiling, and is not a topic's first point. (RocksWal also
  // refuses while a group commit is in flight or when the report would fold.)
  bool Covers(const CommitPoints& next, const std::map<std::string, TopicStats>& ledger) const;
  // Publishes `next` under the lease (Covers() said so).
  void Lease(CommitPoints next) { saved_ = std::move(next); }
  // After a synced write of `points` with `ceiling_ms` (0: removed).
  void Written(const CommitPoints& points, int64_t ceiling_ms);

  // The leased points an append of `topics` must persist in its own batch, as it gives
  // their scopes live entries: the saved points above the durable ones, of the WAL and
  // of those topics (global_ms 0: none).
  CommitPoints LeasedFor(const std::map<std::string, Counts>& topics) const;
  static void PutLeased(const CommitPoints& leased, rocksdb::ColumnFamilyHandle* meta,
                        rocksdb::WriteBatch* wb);
  // After a successful write of `points`: they are durable.
  void NoteDurable(const CommitPoints& points) { durable_ = MaxOf(durable_, points); }
  // The first points of topics without one and without live entries (by `ledger`), an
  // append about to give them their first: at `receive_ms` - 1 (the append's receive
  // time, above every point published, so also above what a forgotten topic published
  // before). Put into `leased` (persisted with the append); SavedFirst() once written.
  // A topic with live entries but no point (a WAL written before first points were)
  // gets none here: its entries may be older.
  void PlanFirstPoints(const std::map<std::string, Counts>& topics, int64_t receive_ms,
                       const std::map<std::string, TopicStats>& ledger,
                       CommitPoints* leased) const;
  void SavedFirst(const CommitPoints& leased) { saved_ = MaxOf(saved_, leased); }

  // At Open and Reopen: `durable` as read from the log.
  void SetDurable(CommitPoints durable) { durable_ = std::move(durable); }
  // At Open: start from `points` and the persisted ceiling; after a crash (a ceiling
  // is left), scopes without live entries (by `ledger`) start at the ceiling.
  void Open(const CommitPoints& points, int64_t ceiling_ms,
            const std::map<std::string, TopicStats>& ledger);
  // At Reopen: memory knows every point published; the log may hold more (a
  // commit-point batch whose failed sync RocksDB kept): the higher one wins.
  void Reopen(const CommitPoints& points, int64_t ceiling_ms);
  // Stops keeping `topic`'s points (ForgetIdleTopics).
  void Forget(const std::string& topic);

 private:
  CommitPoints saved_;
  CommitPoints durable_;
  int64_t ceiling_ms_ = 0;
};

}  // namespace kspool::wal
