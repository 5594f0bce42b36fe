// ReportSplit: the discard report's counts, split at the commit point (FORMAT.md, the
// `split/` keys of `meta`): `before`, cumulative, for the messages received at or before
// the report's point, and `after`, by time bucket, for those settled since. A component
// of RocksWal: Settle() adds to `after` (Split, then Apply), saving a commit point folds
// the buckets it passed into `before` (PlanFold, then Apply), and GetReport() reads it.
//
// The Split and PlanFold methods put their change into the caller's write batch and
// return it; the caller applies it (Apply) once the batch is written, so memory never
// runs ahead of the database.
// Thread safety: none of its own. RocksWal holds it under its mu_ and changes it only
// under its settle_mu_ too, so that a change planned is still valid when applied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "wal/outcome.h"
#include "wal/report.h"
#include "wal/stats.h"

namespace kspool::wal {

class ReportSplit {
 public:
  // Beyond `max_buckets` time buckets in `after`, adjacent ones are merged pairwise
  // (Options::max_report_buckets).
  explicit ReportSplit(size_t max_buckets) : max_buckets_(max_buckets) {}

  // What one Settle changes in `after`: the new counts of the buckets it touched, or,
  // when the table was coarsened, the whole new table.
  struct Change {
    std::map<int64_t, OutcomeTable> put;
    bool coarsened = false;
  };
  // Counts the settled `outcomes` under their receive times into *change, and puts the
  // change into `wb` (keys of `meta`). An undecodable record's receive time is unknown:
  // it counts at `unknown_receive_ms` (just after the saved global commit point: it
  // was not settled when that was saved).
  void Split(const std::vector<Outcome>& outcomes, int64_t unknown_receive_ms,
             rocksdb::ColumnFamilyHandle* meta, rocksdb::WriteBatch* wb, Change* change) const;
  void Apply(Change change);

  // What saving a commit point folds from `after` into `before`.
  struct Fold {
    OutcomeTable before;
    std::optional<int64_t> last_folded;  // key of the newest bucket folded
    int64_t report_point_ms = 0;
  };
  // Folds the buckets complete at `commit_point_ms` into fold->before, and puts the
  // fold and the report's new point into `wb`.
  void PlanFold(int64_t commit_point_ms, rocksdb::ColumnFamilyHandle* meta,
                rocksdb::WriteBatch* wb, Fold* fold) const;
  void Apply(Fold fold);

  // True if saving `commit_point_ms` would fold settled messages into `before` (so it
  // must be a written batch). Else PointAt() is the report's point at it: the commit
  // point, or just below a merged bucket that straddles it; never decreasing.
  bool FoldsAt(int64_t commit_point_ms) const;
  int64_t PointAt(int64_t commit_point_ms) const;

  // What forgetting topics changes: their counts, in `before` and in each bucket of
  // `after`, move under kForgottenTopics (stats.h), so the tables grow with the topics
  // tracked, not with every name ever sent. The totals over all topics stay; a
  // difference of two reports taken across the forgetting is exact summed over topics.
  struct Forget {
    std::vector<std::string> topics;
    OutcomeTable before;                    // kForgottenTopics' new counts
    std::map<int64_t, OutcomeTable> after;  // per bucket touched: the same
  };
  // Plans moving `topics`' counts, and puts the change into `wb`.
  void PlanForget(const std::vector<std::string>& topics, rocksdb::ColumnFamilyHandle* meta,
                  rocksdb::WriteBatch* wb, Forget* change) const;
  void Apply(Forget change);

  // At Open and Reopen: forgets the counts, then loads them key by key (`split/` keys of
  // `meta`), and sets the point (persisted as `report_point_ms`).
  void Clear();
  void Load(std::string_view key, std::string_view value);
  int64_t point_ms() const { return point_ms_; }
  void set_point_ms(int64_t point_ms) { point_ms_ = point_ms; }

  // The report at the report's point, with `ledger` as its ledger.
  Report Get(const std::map<std::string, TopicStats>& ledger) const;
  size_t buckets() const { return after_.size(); }
  uint64_t coarsenings() const { return coarsenings_; }

 private:
  const size_t max_buckets_;
  OutcomeTable before_;  // received <= point_ms_
  // Settled after point_ms_, by time bucket: keyed by the lowest receive time it may
  // hold; buckets are disjoint, each spanning [key, max receive time in it].
  std::map<int64_t, OutcomeTable> after_;
  int64_t point_ms_ = 0;  // <= the saved global commit point
  uint64_t coarsenings_ = 0;
};

}  // namespace kspool::wal
