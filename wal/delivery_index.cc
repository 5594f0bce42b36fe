// DeliveryIndex: writing the delivery index (FORMAT.md, column family `delivery`) and
// bounding it (Options::delivery_retention_ms, delivery_retention_bytes).
//
// Settle() puts the outcomes of the entries it removes into the same write batch, so the
// index costs no fsync of its own and agrees with the ledger after any crash: an outcome
// is in the index exactly when its entry was settled (the index counts only live
// entries' outcomes, as the counters do, so a settle applied again adds nothing).
// Consecutive sequence numbers settled alike share one key (a run, wal/delivery_record.h):
// a settle of thousands of messages delivered to one partition writes one key.
//
// TrimDeliveries() forgets whole runs from the lowest key up and raises the floor past
// them, in one unsynced batch: a crash may bring them back, with the totals and floor as
// they were, which is as consistent as before. Age forgets only below the oldest live
// entry, counted from a run's release (PlanTrim): the feed stops at a live entry, so
// what lies above one has not been read by a follower waiting there.
#include <algorithm>

#include "wal/delivery_index.h"
#include "wal/delivery_record.h"
#include "wal/keys.h"
#include "wal/oldest_prefix.h"
#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

// One call removes at most this many runs, so that Settle, which waits for it, is never
// held up long; DeliveryTrim::more says when to call again.
constexpr size_t kMaxTrimRuns = 65536;

// The runs of n outcomes, at(0) .. at(n - 1), settled at now_ms unless they carry their
// own time; false (with *runs partly filled) if they are not in sequence order.
template <typename At>
bool BuildRuns(const At& at, size_t n, int64_t now_ms, std::vector<DeliveryRun>* runs) {
  runs->clear();
  for (size_t i = 0; i < n; ++i) {
    const Outcome& o = at(i);
    const int64_t time_ms = o.time_ms != 0 ? o.time_ms : now_ms;
    if (!runs->empty()) {
      DeliveryRun& run = runs->back();
      if (run.Extends(o, time_ms)) {
        ++run.count;
        continue;
      }
      if (o.seq < run.end_seq()) return false;
    }
    runs->push_back(DeliveryRun::Of(o, time_ms));
  }
  return true;
}

}  // namespace

void DeliveryIndex::Load(Counts totals, uint64_t floor) {
  MutexLock l(&mu_);
  totals_ = totals;
  floor_ = floor;
  none_below_ = 0;
}

void DeliveryIndex::NoteTrimmed(const Trim& trim) {
  MutexLock l(&mu_);
  none_below_ = std::max(none_below_, trim.none_below);
}

Counts DeliveryIndex::totals() const {
  MutexLock l(&mu_);
  return totals_;
}

uint64_t DeliveryIndex::floor() const {
  MutexLock l(&mu_);
  return floor_;
}

void DeliveryIndex::SetTotals(Counts totals) {
  MutexLock l(&mu_);
  totals_ = totals;
}

Counts DeliveryIndex::Index(const std::vector<Outcome>& outcomes, int64_t now_ms,
                            const OpenDb& db, rocksdb::WriteBatch* wb) {
  // One pass in the given order, which the drain's batches usually keep (measured: a
  // second pass to check the order cost as much as building the runs); a batch out of
  // order is done again, sorted.
  std::vector<DeliveryRun> runs;
  auto given = [&](size_t i) -> const Outcome& { return outcomes[i]; };
  if (!BuildRuns(given, outcomes.size(), now_ms, &runs)) {
    std::vector<const Outcome*> order;
    order.reserve(outcomes.size());
    for (const Outcome& o : outcomes) order.push_back(&o);
    std::sort(order.begin(), order.end(),
              [](const Outcome* a, const Outcome* b) { return a->seq < b->seq; });
    auto sorted = [&](size_t i) -> const Outcome& { return *order[i]; };
    BuildRuns(sorted, order.size(), now_ms, &runs);
  }
  Counts total;
  {
    MutexLock l(&mu_);
    total = totals_;
    // A run of entries settled out of order may be keyed below the last trim.
    for (const DeliveryRun& run : runs) none_below_ = std::min(none_below_, run.first_seq);
  }
  for (const DeliveryRun& run : runs) {
    const std::string key = keys::Seq(run.first_seq);
    const std::string value = EncodeDeliveryRun(run);
    total.count += run.count;
    total.bytes += key.size() + value.size();
    wb->Put(db.delivery, key, value);
  }
  // The total, not an increment: a batch applied twice writes the same value.
  wb->Put(db.meta, keys::kDeliveryIndex, keys::EncodeCounts(total));
  return total;
}

absl::StatusOr<DeliveryIndex::Trim> DeliveryIndex::PlanTrim(const OpenDb& db, uint64_t head,
                                                            rocksdb::WriteBatch* wb) {
  Trim trim;
  const uint64_t max_bytes = retention_bytes_;
  const int64_t max_age = retention_ms_;
  Counts index;
  uint64_t floor, from;
  {
    MutexLock l(&mu_);
    index = totals_;
    floor = floor_;
    from = none_below_;
  }
  if (max_age <= 0 && index.bytes <= max_bytes) return trim;
  const int64_t now_ms = clock_->NowMillis();

  DeliveryTrim& removed_runs = trim.removed;
  // When the feed could first return the run being looked at: once it and every outcome
  // below it were known (the largest time so far, runs being offered in key order).
  // Retention counts from then, so that a follower held back by a stuck entry below
  // finds, once that entry settles, everything above it still kept for as long.
  int64_t released_ms = 0;
  auto take = [&](uint64_t seq, std::string_view value) {
    absl::StatusOr<DeliveryRun> run = DecodeDeliveryRun(keys::Seq(seq), value);
    if (run.ok()) released_ms = std::max(released_ms, run->time_ms);
    // At or above the head, an entry below is still live: no follower has had the run,
    // so age does not remove it (only the byte bound does). An unreadable run below the
    // head has no time: it goes as the oldest. Its messages are not known; the totals
    // lose only its bytes.
    const bool aged =
        max_age > 0 && seq < head && (!run.ok() || now_ms - released_ms >= max_age);
    const bool remove = (max_bytes > 0 && index.bytes > max_bytes) || aged;
    if (!remove) return TakeKey::kStop;
    const uint64_t messages = run.ok() ? run->count : 0;
    const uint64_t bytes = 8 + value.size();  // key and value
    removed_runs.messages += messages;
    removed_runs.bytes += bytes;
    index.count -= std::min(index.count, messages);
    index.bytes -= std::min(index.bytes, bytes);
    floor = std::max(floor, run.ok() ? run->end_seq() : seq + 1);
    return TakeKey::kTake;
  };
  ASSIGN_OR_RETURN(OldestPrefix removed,
                   TakeOldest(db.db.get(), db.delivery, db.IteratorOptions(db.delivery), from,
                              kMaxTrimRuns, take));
  trim.removed.more = removed.more;
  if (removed.taken.empty()) return trim;

  DeleteTaken(removed, db.delivery, wb);
  trim.none_below = removed.end;
  wb->Put(db.meta, keys::kDeliveryIndex, keys::EncodeCounts(index));
  wb->Put(db.meta, keys::kDeliveryFloor, keys::U64(floor));
  trim.totals = index;
  // Raised before the runs disappear: a reader that misses one sees the new floor.
  MutexLock l(&mu_);
  floor_ = std::max(floor_, floor);
  return trim;
}

}  // namespace kspool::wal
