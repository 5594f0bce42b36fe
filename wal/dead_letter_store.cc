// DeadLetterStore: the dead letters' totals, reading them, keeping the discarded
// entries of a settle, and their own limits (Options::max_dead_letter_bytes and
// max_dead_letter_age_ms).
//
// PlanTrim removes the oldest (lowest sequence number) first: while the bytes are over the limit, then
// while the oldest was discarded longer ago than the age limit. The age check stops at
// the first younger one, so a dead letter can outlive the age limit while an older-
// numbered one discarded later shields it; the byte limit always holds.

#include "wal/dead_letter_store.h"

#include <algorithm>

#include "wal/dead_letter.h"
#include "wal/keys.h"
#include "wal/oldest_prefix.h"
#include "wal/record.h"
#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

// One call removes at most this much, so that Settle, which waits for it, is never held
// up long; DeadLetterTrim::more says when to call again.
constexpr size_t kMaxTrimEntries = 20000;
constexpr uint64_t kMaxTrimBytes = 32ull << 20;

constexpr char kBySize[] = "size";
constexpr char kByAge[] = "age";

// The topic a dead letter's record was for; "" when even that cannot be read.
std::string DeadLetterTopic(const absl::StatusOr<DeadLetter>& d) {
  if (!d.ok()) return "";
  absl::StatusOr<Record> rec = DecodeRecord(d->raw);
  return rec.ok() ? rec->topic : SalvageTopic(d->raw);
}

}  // namespace

absl::StatusOr<Counts> CountDeadLetters(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* dead,
                                        const rocksdb::ReadOptions& scan) {
  Counts c;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(scan, dead));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    c.count += 1;
    c.bytes += it->value().size();
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "count dead letters"));
  return c;
}

Counts DeadLetterStore::totals() const {
  MutexLock l(&mu_);
  return totals_;
}

void DeadLetterStore::SetTotals(Counts totals) {
  MutexLock l(&mu_);
  totals_ = totals;
}

void DeadLetterStore::NoteTrimmed(const Trim& trim) {
  MutexLock l(&mu_);
  none_below_ = std::max(none_below_, trim.none_below);
}

Counts DeadLetterStore::Keep(const std::vector<Outcome>& outcomes, int64_t now_ms,
                             const OpenDb& db, rocksdb::WriteBatch* wb) {
  Counts added;
  uint64_t lowest = UINT64_MAX;
  for (const Outcome& o : outcomes) {
    if (!o.discarded()) continue;
    lowest = std::min(lowest, o.seq);
    std::string letter = EncodeDeadLetter(o, now_ms);
    added.count += 1;
    added.bytes += letter.size();
    wb->Put(db.dead, keys::Seq(o.seq), letter);
  }
  if (lowest != UINT64_MAX) {
    MutexLock l(&mu_);  // one settled out of order may land below the last trim
    none_below_ = std::min(none_below_, lowest);
  }
  return added;
}

absl::StatusOr<DeadLetterStore::Trim> DeadLetterStore::PlanTrim(const OpenDb& db,
                                                                rocksdb::WriteBatch* wb) const {
  Trim plan;
  DeadLetterTrim& trim = plan.removed;
  const uint64_t max_bytes = max_bytes_;
  const int64_t max_age = max_age_ms_;
  Counts dead;
  uint64_t from;
  {
    MutexLock l(&mu_);
    dead = totals_;
    from = none_below_;
  }
  if (dead.count == 0 || (max_age <= 0 && dead.bytes <= max_bytes)) return plan;
  const int64_t now_ms = clock_->NowMillis();

  auto& dropped = plan.dropped;
  uint64_t removed_bytes = 0;
  auto take = [&](uint64_t seq, std::string_view value) {
    if (removed_bytes >= kMaxTrimBytes) return TakeKey::kBound;
    absl::StatusOr<DeadLetter> d = DecodeDeadLetter(seq, value);
    const char* limit = nullptr;
    if (max_bytes > 0 && dead.bytes > max_bytes) {
      limit = kBySize;
    } else if (max_age > 0 && (!d.ok() || now_ms - d->discard_time_ms >= max_age)) {
      limit = kByAge;  // an unreadable one has no time; it goes as the oldest
    } else {
      return TakeKey::kStop;
    }
    Counts& c = limit == kBySize ? trim.by_size : trim.by_age;
    c.count += 1;
    c.bytes += value.size();
    Counts& t = dropped[DeadLetterTopic(d)][limit];
    t.count += 1;
    t.bytes += value.size();
    dead.count -= std::min<uint64_t>(dead.count, 1);
    dead.bytes -= std::min<uint64_t>(dead.bytes, value.size());
    removed_bytes += value.size();
    return TakeKey::kTake;
  };
  ASSIGN_OR_RETURN(
      OldestPrefix removed,
      TakeOldest(db.db.get(), db.dead, db.IteratorOptions(db.dead), from, kMaxTrimEntries, take));
  trim.more = removed.more;
  if (removed.taken.empty()) return plan;

  DeleteTaken(removed, db.dead, wb);
  plan.none_below = removed.end;
  wb->Put(db.meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  plan.totals = dead;
  return plan;
}

absl::Status DeadLetterStore::Scan(const OpenDb& db, uint64_t from_seq, size_t max_entries,
                                   std::vector<DeadLetter>* out) const {
  std::string lo = keys::Seq(from_seq);
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(db.IteratorOptions(db.dead), db.dead));
  for (it->Seek(lo); it->Valid() && out->size() < max_entries; it->Next()) {
    uint64_t seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    absl::StatusOr<DeadLetter> d =
        DecodeDeadLetter(seq, std::string_view(it->value().data(), it->value().size()));
    if (!d.ok()) return d.status();
    out->push_back(std::move(d).value());
  }
  return FromRocks(it->status(), "scan dead letters");
}

}  // namespace kspool::wal
