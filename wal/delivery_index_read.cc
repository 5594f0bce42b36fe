// DeliveryIndex: reading the delivery index (FORMAT.md, column family `delivery`): what became
// of given sequence numbers (LookupDeliveries) and the feed of outcomes in sequence
// order (ScanDeliveries).
//
// Consistency with Settle() and TrimDeliveries(), which run concurrently:
//  * A settle writes an entry's run and deletes the entry in one batch, so a lookup that
//    reads the index and the log in one snapshot sees the entry in exactly one of them.
//    The head and the next number are read before the snapshot: whatever settles or
//    commits after them is in the snapshot's index, or not yet visible at all.
//  * A trim raises the floor before its deletions become visible, and readers read the
//    floor after they took their snapshot (or iterator): a run missing from their view
//    is below the floor they read, so they say so instead of skipping it silently.
//  * The feed stops at the head read before its iterator: every entry below it is
//    settled and its run written, so nothing it returns can change, and it never
//    returns an outcome past one it has not returned yet.
#include <algorithm>
#include <iterator>
#include <numeric>

#include "wal/delivery_index.h"
#include "wal/delivery_record.h"
#include "wal/keys.h"
#include "wal/log_cursor.h"
#include "wal/record.h"
#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

std::string_view View(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

// Decodes the run that the iterator is at.
absl::StatusOr<DeliveryRun> RunAt(const rocksdb::Iterator& it) {
  return DecodeDeliveryRun(View(it.key()), View(it.value()));
}

Outcome Unknown(uint64_t seq, std::string why) {
  Outcome d;
  d.seq = seq;
  d.state = Outcome::State::kUnknown;
  d.error = std::move(why);
  return d;
}

}  // namespace

absl::Status DeliveryIndex::Lookup(const OpenDb& db, uint64_t head, uint64_t next,
                                   const std::vector<uint64_t>& seqs,
                                   std::vector<Outcome>* out) const {
  rocksdb::ManagedSnapshot snapshot(db.db.get());
  const uint64_t floor = this->floor();
  rocksdb::ReadOptions index_ro = db.IteratorOptions(db.delivery);
  index_ro.snapshot = snapshot.snapshot();
  std::unique_ptr<rocksdb::Iterator> index;
  if (db.delivery) index.reset(db.db->NewIterator(index_ro, db.delivery));
  LogCursor log(db, {head, next, /*fill_cache=*/true, snapshot.snapshot()});

  // In sequence order, so that one run answers for every number it covers.
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a] < seqs[b]; });
  std::vector<Outcome> found(seqs.size());  // appended to *out only if every lookup works
  std::optional<DeliveryRun> run;  // the last one read
  for (size_t i : order) {
    const uint64_t seq = seqs[i];
    Outcome& d = found[i];
    if (index && !(run && run->Covers(seq))) {
      run.reset();
      index->SeekForPrev(keys::Seq(seq));
      if (index->Valid()) {
        ASSIGN_OR_RETURN(run, RunAt(*index));
      }
      RETURN_IF_ERROR(FromRocks(index->status(), "read the delivery index"));
    }
    if (run && run->Covers(seq)) {
      d = run->At(seq);
      continue;
    }
    if (seq >= head && seq < next) {
      log.Seek(seq);
      RETURN_IF_ERROR(log.status("read WAL entry " + std::to_string(seq)));
      if (log.Valid() && log.seq() == seq) {
        d.seq = seq;
        d.state = Outcome::State::kPending;
        // Its topic, so that a caller may be told only of topics it may send to.
        d.topic = std::string(log.Routing().topic);
        continue;
      }
    }
    if (seq == 0) {
      d = Unknown(seq, "sequence numbers start at 1");
    } else if (seq < floor) {
      d = Unknown(seq, "older than the delivery index keeps (oldest kept: " +
                           std::to_string(floor) + ")");
    } else if (seq >= next) {
      d = Unknown(seq, "not assigned yet (next: " + std::to_string(next) + ")");
    } else {
      d = Unknown(seq, "no message was accepted with this sequence number");
    }
  }
  out->insert(out->end(), std::make_move_iterator(found.begin()),
              std::make_move_iterator(found.end()));
  return absl::OkStatus();
}

absl::Status DeliveryIndex::Scan(const OpenDb& db, uint64_t head, uint64_t from_seq,
                                 size_t max_entries, std::vector<Outcome>* out,
                                 uint64_t* next) const {
  const std::string hi = keys::Seq(head);
  const rocksdb::Slice hi_s(hi);
  rocksdb::ReadOptions ro = db.IteratorOptions(db.delivery);
  ro.iterate_upper_bound = &hi_s;
  std::unique_ptr<rocksdb::Iterator> it;
  if (db.delivery) it.reset(db.db->NewIterator(ro, db.delivery));
  const uint64_t floor = this->floor();
  if (from_seq < floor) {
    *next = floor;  // where the caller may go on from, having missed [from_seq, floor)
    return absl::OutOfRangeError("the outcomes of sequence numbers " + std::to_string(from_seq) +
                                 ".." + std::to_string(floor - 1) +
                                 " are no longer kept (the delivery index starts at " +
                                 std::to_string(floor) + ")");
  }
  *next = from_seq;
  if (max_entries == 0) return absl::OkStatus();
  if (from_seq >= head || !it) {
    *next = std::max(from_seq, head);
    return absl::OkStatus();
  }
  // The run that holds from_seq may start below it.
  it->SeekForPrev(keys::Seq(from_seq));
  // Not Valid() after a read error either: that is not "no run below", which would skip
  // the outcomes of the run holding from_seq.
  RETURN_IF_ERROR(FromRocks(it->status(), "read the delivery index"));
  if (it->Valid()) {
    ASSIGN_OR_RETURN(DeliveryRun run, RunAt(*it));
    if (!run.Covers(from_seq)) it->Next();
  } else {
    it->Seek(keys::Seq(from_seq));
  }
  size_t n = 0;
  for (; it->Valid(); it->Next()) {
    ASSIGN_OR_RETURN(DeliveryRun run, RunAt(*it));
    for (uint64_t seq = std::max(run.first_seq, from_seq); seq < run.end_seq() && seq < head;
         ++seq) {
      if (n == max_entries) {
        *next = seq;
        return absl::OkStatus();
      }
      out->push_back(run.At(seq));
      ++n;
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "read the delivery index"));
  *next = head;
  return absl::OkStatus();
}

}  // namespace kspool::wal
