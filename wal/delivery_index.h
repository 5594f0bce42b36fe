// DeliveryIndex: the WAL's index of settled outcomes (FORMAT.md, column family
// `delivery`): writing the runs of a settle into its batch, answering lookups and the
// ordered feed, and bounding it (Options::delivery_retention_ms, _bytes). A component of
// RocksWal, which implements DeliveryQueries and Maintenance::TrimDeliveries with it.
//
// Owns the index's persisted totals and its floor (every outcome below it forgotten).
// The database is RocksWal's: every method that reads or writes takes the OpenDb for
// the duration of the call, which the caller keeps open (RocksWal's db_mu_, shared).
// Thread safety: every method may be called from any thread; mu_ is a leaf lock. The
// writers of the column family and of the totals (Index() with the SetTotals() after its
// batch is written, PlanTrim() with its SetTotals()) must be serialized by the caller
// (RocksWal's settle_mu_), so that each one's totals start from the last one's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "rocksdb/write_batch.h"
#include "wal/maintenance.h"
#include "wal/open_db.h"
#include "wal/outcome.h"
#include "wal/stats.h"

namespace kspool::wal {

class DeliveryIndex {
 public:
  // Outcomes released at least `retention_ms` ago (PlanTrim), and the oldest beyond
  // `retention_bytes` stored bytes, are trimmed (0: no limit of this kind).
  DeliveryIndex(Clock* clock, int64_t retention_ms, uint64_t retention_bytes)
      : clock_(clock), retention_ms_(retention_ms), retention_bytes_(retention_bytes) {}

  // At Open and Reopen: the persisted totals and floor.
  void Load(Counts totals, uint64_t floor) ABSL_LOCKS_EXCLUDED(mu_);
  Counts totals() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t floor() const ABSL_LOCKS_EXCLUDED(mu_);

  // Writing (delivery_index.cc).
  //
  // Puts the runs of the settled `outcomes` (live ones only; time_ms 0 means `now_ms`)
  // and the index's new totals into `wb`, and returns those totals, to be taken over
  // with SetTotals() once the batch is written.
  Counts Index(const std::vector<Outcome>& outcomes, int64_t now_ms, const OpenDb& db,
               rocksdb::WriteBatch* wb) ABSL_LOCKS_EXCLUDED(mu_);
  void SetTotals(Counts totals) ABSL_LOCKS_EXCLUDED(mu_);

  // A planned trim: what it removes, and the totals to take over once its batch is
  // written.
  struct Trim {
    DeliveryTrim removed;
    Counts totals;
    uint64_t none_below = 0;  // once written, no run is left keyed below this
  };
  // Plans the removal of the oldest runs (whole runs, from the lowest key up) while the
  // index's bytes exceed the byte limit, then of those released at least retention_ms
  // ago, stopping at the first younger one; at most 65,536 runs (removed.more: call
  // again). A run is released once it and every run below it are known (the largest
  // time of the runs up to it) and only below `head`, the oldest live entry (read with
  // settling held off): a stuck entry holds back the feed, so age never takes a run a
  // follower from the head could not yet have read, and the floor passes the head only
  // by the byte bound. Puts the removal, the new totals and the new floor into `wb`
  // (left empty when nothing is to go). The floor in memory is raised before this
  // returns, so that a reader that misses a run once the batch is written sees the new
  // floor.
  absl::StatusOr<Trim> PlanTrim(const OpenDb& db, uint64_t head, rocksdb::WriteBatch* wb)
      ABSL_LOCKS_EXCLUDED(mu_);
  // After a trim's batch is written: its none_below, where the next trim starts.
  void NoteTrimmed(const Trim& trim) ABSL_LOCKS_EXCLUDED(mu_);
  bool has_limits() const { return retention_bytes_ > 0 || retention_ms_ > 0; }

  // Reading (delivery_index_read.cc): DeliveryQueries' LookupDeliveries and
  // ScanDeliveries, given the live range [head, next) read before the call.
  absl::Status Lookup(const OpenDb& db, uint64_t head, uint64_t next,
                      const std::vector<uint64_t>& seqs, std::vector<Outcome>* out) const
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Scan(const OpenDb& db, uint64_t head, uint64_t from_seq, size_t max_entries,
                    std::vector<Outcome>* out, uint64_t* next) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  Clock* const clock_;
  const int64_t retention_ms_;
  const uint64_t retention_bytes_;

  mutable Mutex mu_;
  Counts totals_ ABSL_GUARDED_BY(mu_);  // the persisted totals: outcomes, stored bytes
  uint64_t floor_ ABSL_GUARDED_BY(mu_) = 1;
  // No run is keyed below this: a trim walks from here, not over the point tombstones
  // of earlier trims (oldest_prefix.h). 0 after a (re)open. Not the floor: a run of an
  // entry settled late may be keyed below the floor.
  uint64_t none_below_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kspool::wal
