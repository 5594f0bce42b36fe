// RocksWal: reading the log in sequence order, settling (removing) entries, and the
// receive-time bound behind the commit point.
//
// The log is used as a queue, so deletes pile up at its head. Scans always start at
// the oldest live entry (iterate_lower_bound), the contiguous settled prefix is removed
// with one DeleteRange, and only entries settled out of order get point tombstones.
#include <algorithm>

#include "wal/dead_letter.h"
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

Entry DecodeEntry(uint64_t seq, std::string_view raw) {
  Entry e;
  e.seq = seq;
  e.size = raw.size();
  absl::StatusOr<Record> rec = DecodeRecord(raw);
  if (rec.ok()) {
    e.record = std::move(rec).value();
  } else {
    e.status = rec.status();
    e.raw.assign(raw);
  }
  return e;
}

std::optional<uint64_t> RocksWal::FirstLiveAtOrAfter(uint64_t from, uint64_t limit) const {
  if (from >= limit || !db_) return std::nullopt;
  std::string lo = keys::Seq(from), hi = keys::Seq(limit);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->log));
  it->Seek(lo_s);
  if (!it->Valid()) return std::nullopt;
  return keys::ParseSeq(it->key().ToString());
}

absl::Status RocksWal::Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                            std::vector<Entry>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t lower, upper, verify_from;
  bool learn;
  {
    MutexLock l(&mu_);
    lower = std::max(from_seq, head_);
    upper = committed_next_;
    verify_from = std::max(verified_upto_, head_);
    learn = lower <= verify_from && verify_from < unverified_below_;
  }
  if (lower >= upper || max_entries == 0) return absl::OkStatus();
  std::string lo = keys::Seq(lower), hi = keys::Seq(upper);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  // Each entry is read once, in order: caching its blocks only evicts useful ones.
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->log));
  out->reserve(out->size() + std::min<uint64_t>({max_entries, upper - lower, 65536}));
  const size_t first = out->size();
  size_t n = 0, bytes = 0;
  for (it->Seek(lo_s); it->Valid() && n < max_entries && bytes < max_bytes; it->Next(), ++n) {
    std::string_view raw(it->value().data(), it->value().size());
    bytes += raw.size();
    out->push_back(
        DecodeEntry(keys::ParseSeq(std::string_view(it->key().data(), it->key().size())), raw));
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "scan WAL"));
  // Every key in [lower, end) was seen; after a restart that tells Settle() the gaps.
  if (learn) {
    const uint64_t end =
        !it->Valid() ? upper : (out->size() > first ? out->back().seq + 1 : lower);
    NoteScanned(verify_from, end, *out, first);
  }
  return absl::OkStatus();
}

absl::Status RocksWal::Settle(const std::vector<Outcome>& given) {
  if (given.empty()) return absl::OkStatus();
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t head;
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
    head = head_;
  }
  // Only outcomes of live entries count (idempotence; rocks_wal_live.cc).
  std::vector<uint64_t> seqs;  // sorted, unique
  std::vector<Outcome> kept;
  ASSIGN_OR_RETURN(const std::vector<Outcome>* live, LiveOutcomes(given, &seqs, &kept));
  if (seqs.empty()) return absl::OkStatus();
  // A record that does not decode is charged to the topic whose ledger owns it.
  std::vector<Outcome> attributed;
  const std::vector<Outcome>& outcomes = AttributeUnreadable(*live, &attributed);
  // Which entries go: the settled prefix [head, cand) as one range tombstone, runs of
  // consecutive sequence numbers above it as range tombstones, the rest one by one.
  uint64_t cand = head;
  size_t i = std::lower_bound(seqs.begin(), seqs.end(), head) - seqs.begin();
  while (true) {
    if (i < seqs.size() && seqs[i] == cand) {
      ++cand;
      ++i;
    } else if (uint64_t end = deleted_above_head_.RunEnd(cand); end > cand) {
      cand = end;
      while (i < seqs.size() && seqs[i] < cand) ++i;
    } else {
      break;
    }
  }
  rocksdb::WriteBatch wb;
  const int64_t now_ms = options_.clock->NowMillis();
  bool range_deleted = false;
  if (cand > head) {
    wb.Put(db_->meta, keys::kHead, keys::U64(cand));
    if (cand - range_deleted_below_ >= 65536 || now_ms - last_range_delete_ms_ >= 1000) {
      wb.DeleteRange(db_->log, keys::Seq(range_deleted_below_), keys::Seq(cand));
      range_deleted = true;
    }
  }
  constexpr size_t kMinRun = 16;
  for (size_t run = i; run < seqs.size();) {
    size_t end = run + 1;
    while (end < seqs.size() && seqs[end] == seqs[end - 1] + 1) ++end;
    if (end - run >= kMinRun) {
      wb.DeleteRange(db_->log, keys::Seq(seqs[run]), keys::Seq(seqs[end - 1] + 1));
    } else {
      for (size_t k = run; k < end; ++k) wb.Delete(db_->log, keys::Seq(seqs[k]));
    }
    run = end;
  }
  uint64_t bytes = 0;
  Counts added;  // to the dead letters
  for (const Outcome& o : outcomes) {
    bytes += o.size;
    if (o.discard_reason.empty()) continue;
    std::string letter = EncodeDeadLetter(o, now_ms);
    added.count += 1;
    added.bytes += letter.size();
    wb.Put(db_->dead, keys::Seq(o.seq), letter);
  }
  // New totals of the touched counters, aggregated per (topic, outcome) first: a batch
  // holds thousands of messages but only a few topics.
  std::map<std::string, TopicStats> totals;
  Counts dead;  // the dead letters' totals after this batch
  {
    MutexLock l(&mu_);
    dead = {dead_.count + added.count, dead_.bytes + added.bytes};
    const Outcome* last = nullptr;
    Counts* last_counts = nullptr;
    for (const Outcome& o : outcomes) {
      if (!last || o.topic != last->topic || o.discard_reason != last->discard_reason) {
        auto [it, fresh] = totals.try_emplace(o.topic);
        if (fresh) {
          auto t = topics_.find(o.topic);
          if (t != topics_.end()) it->second = t->second;
        }
        last_counts = o.discard_reason.empty() ? &it->second.delivered
                                               : &it->second.discarded[o.discard_reason];
        last = &o;
      }
      last_counts->count += 1;
      last_counts->bytes += o.size;
    }
  }
  for (const auto& [topic, t] : totals) {
    wb.Put(db_->meta, keys::Delivered(topic), keys::EncodeCounts(t.delivered));
    for (const auto& [reason, c] : t.discarded) {
      wb.Put(db_->meta, keys::Discarded(topic, reason), keys::EncodeCounts(c));
    }
  }
  if (added.count > 0) wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  SplitChange split;
  SplitSettled(outcomes, &wb, &split);
  const Counts index = IndexOutcomes(outcomes, now_ms, &wb);
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "settle");
    return FromRocks(s, "settle WAL entries");
  }

  uint64_t limit;
  {
    MutexLock l(&mu_);
    for (auto& [topic, t] : totals) {
      topics_[topic].delivered = t.delivered;
      for (auto& [reason, c] : t.discarded) topics_[topic].discarded[reason] = c;
    }
    live_bytes_ -= std::min(live_bytes_, bytes);
    dead_ = dead;
    delivery_index_ = index;
    ApplySplit(std::move(split));
    limit = committed_next_;
  }
  if (range_deleted) {
    range_deleted_below_ = cand;
    last_range_delete_ms_ = now_ms;
  }
  // Entries below cand are gone; a gap (a failed append, or entries deleted before a
  // restart) is skipped by seeking to the next live one.
  for (size_t k = i; k < seqs.size(); ++k) deleted_above_head_.Add(seqs[k]);
  uint64_t new_head = FirstLiveAtOrAfter(cand, limit).value_or(limit);
  deleted_above_head_.EraseBelow(new_head);
  MutexLock l(&mu_);
  head_ = std::max(head_, new_head);
  while (!gaps_.empty() && gaps_.begin()->second <= head_) gaps_.erase(gaps_.begin());
  return absl::OkStatus();
}

absl::StatusOr<int64_t> RocksWal::ReceiveTimeBound(uint64_t from_seq) {
  // mu_ is held across the seek so that no group commits in between: the answer then
  // covers the log, the group being written, and every future group.
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  MutexLock l(&mu_);
  std::optional<uint64_t> first = FirstLiveAtOrAfter(std::max(from_seq, head_), committed_next_);
  if (first) {
    std::string v;
    RETURN_IF_ERROR(FromRocks(db_->db->Get(rocksdb::ReadOptions(), db_->log, keys::Seq(*first), &v),
                              "read WAL entry " + std::to_string(*first)));
    absl::StatusOr<int64_t> t = PeekReceiveTime(v);
    if (t.ok()) return *t;
    // An unreadable record cannot vouch for its time, but it was not settled when the
    // last commit point was saved, so it was received after that point.
    return saved_points_.global_ms + 1;
  }
  if (writing_receive_ms_) return *writing_receive_ms_;
  int64_t bound = std::max(std::max(options_.clock->NowMillis(), last_receive_ms_) + 1,
                           receive_floor_ms_);
  receive_floor_ms_ = bound;
  return bound;
}

absl::Status RocksWal::ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                                       std::vector<DeadLetter>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  std::string lo = keys::Seq(from_seq);
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(rocksdb::ReadOptions(), db_->dead));
  for (it->Seek(lo); it->Valid() && out->size() < max_entries; it->Next()) {
    uint64_t seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    absl::StatusOr<DeadLetter> d =
        DecodeDeadLetter(seq, std::string_view(it->value().data(), it->value().size()));
    if (!d.ok()) return d.status();
    out->push_back(std::move(d).value());
  }
  return FromRocks(it->status(), "scan dead letters");
}

absl::Status RocksWal::CountLive(std::map<std::string, Counts>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t head;
  {
    MutexLock l(&mu_);
    head = head_;
  }
  return CountLiveBetween(head, UINT64_MAX, out);
}

}  // namespace kspool::wal
