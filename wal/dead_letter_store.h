// DeadLetterStore: the WAL's dead letters (FORMAT.md, column family `dead`): their
// persisted totals, the discarded entries a settle keeps, reading them in order, and
// their own limits (Options::max_dead_letter_bytes, max_dead_letter_age_ms). A component
// of RocksWal, which implements Inspection::ScanDeadLetters, Maintenance::TrimDeadLetters
// and the dead letters' part of Settle, replay and purge with it. The value codec is
// dead_letter.h.
//
// Owns the totals. The database is RocksWal's: every method that reads or writes takes
// the OpenDb for the duration of the call, which the caller keeps open (RocksWal's
// db_mu_, shared).
// Thread safety: every method may be called from any thread; mu_ is a leaf lock. The
// writers of the column family and of the totals (a settle, PlanTrim(), replay and
// purge, each with the SetTotals() after its batch is written) must be serialized by
// the caller (RocksWal's settle_mu_), so that each one's totals start from the last one's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "wal/entry.h"
#include "wal/maintenance.h"
#include "wal/open_db.h"
#include "wal/outcome.h"
#include "wal/stats.h"

namespace kspool::wal {

// The dead letters' totals, counted by scanning `dead`: once, for a WAL written before
// they were kept in `meta`.
absl::StatusOr<Counts> CountDeadLetters(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* dead,
                                        const rocksdb::ReadOptions& scan);

class DeadLetterStore {
 public:
  // Beyond `max_bytes` stored bytes the oldest are trimmed, and those discarded at least
  // `max_age_ms` ago (0: no limit of this kind).
  DeadLetterStore(Clock* clock, uint64_t max_bytes, int64_t max_age_ms)
      : clock_(clock), max_bytes_(max_bytes), max_age_ms_(max_age_ms) {}

  // At Open and Reopen: the persisted totals (where the oldest is, is not known).
  void Load(Counts totals) ABSL_LOCKS_EXCLUDED(mu_) {
    SetTotals(totals);
    MutexLock l(&mu_);
    none_below_ = 0;
  }
  Counts totals() const ABSL_LOCKS_EXCLUDED(mu_);
  // After a batch that changed the store is written: its new totals.
  void SetTotals(Counts totals) ABSL_LOCKS_EXCLUDED(mu_);

  // Puts the discarded ones of the settled `outcomes` (live ones only) into `wb` as dead
  // letters discarded at `now_ms`; returns what they add to the totals.
  Counts Keep(const std::vector<Outcome>& outcomes, int64_t now_ms, const OpenDb& db,
              rocksdb::WriteBatch* wb) ABSL_LOCKS_EXCLUDED(mu_);

  // Reads dead letters with seq >= from_seq, in order, up to max_entries in *out.
  absl::Status Scan(const OpenDb& db, uint64_t from_seq, size_t max_entries,
                    std::vector<DeadLetter>* out) const;

  // A planned trim: what it removes, per topic and limit ("size", "age") what it drops,
  // and the totals to take over once its batch is written.
  struct Trim {
    DeadLetterTrim removed;
    std::map<std::string, std::map<std::string, Counts>> dropped;  // topic -> limit
    Counts totals;
    uint64_t none_below = 0;  // once written, no dead letter is left below this
  };
  // Plans the removal of the oldest dead letters (in sequence order) while their bytes
  // exceed max_bytes, then of those discarded at least max_age_ms ago, stopping at the
  // first younger one; a bounded amount per call (removed.more: call again). Puts the
  // removal and the new totals into `wb` (left empty when nothing is to go); the
  // caller adds the per-topic `dead_dropped` counters.
  absl::StatusOr<Trim> PlanTrim(const OpenDb& db, rocksdb::WriteBatch* wb) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // After a trim's batch is written: its none_below, where the next trim starts.
  void NoteTrimmed(const Trim& trim) ABSL_LOCKS_EXCLUDED(mu_);
  bool has_limits() const { return max_bytes_ > 0 || max_age_ms_ > 0; }

 private:
  Clock* const clock_;
  const uint64_t max_bytes_;
  const int64_t max_age_ms_;

  mutable Mutex mu_;
  Counts totals_ ABSL_GUARDED_BY(mu_);  // the dead letters (bytes: stored values)
  // No dead letter is stored below this sequence number: a trim walks from here, not
  // over the point tombstones of earlier trims (oldest_prefix.h). 0 after a (re)open.
  uint64_t none_below_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kspool::wal
