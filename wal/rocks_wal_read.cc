// RocksWal: reading the log in sequence order, settling (removing) entries, and the
// receive-time bound behind the commit point.
//
// The log is used as a queue, so deletes pile up at its head. Scans always start at
// the oldest live entry (iterate_lower_bound), the contiguous settled prefix is removed
// with one DeleteRange, and only entries settled out of order get point tombstones.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

namespace kspool::wal {
namespace {

void PutDeadLetter(const Outcome& o, int64_t now_ms, std::string* out) {
  auto put_bytes = [out](std::string_view s) {
    uint64_t n = s.size();
    while (n >= 0x80) {
      out->push_back(static_cast<char>(n | 0x80));
      n >>= 7;
    }
    out->push_back(static_cast<char>(n));
    out->append(s.data(), s.size());
  };
  out->push_back(1);
  out->append(keys::U64(static_cast<uint64_t>(now_ms)));
  put_bytes(o.discard_reason);
  put_bytes(o.error_text);
  out->append(o.raw);
}

}  // namespace

std::optional<uint64_t> RocksWal::FirstLiveAtOrAfter(uint64_t from, uint64_t limit) const {
  if (from >= limit) return std::nullopt;
  std::string lo = keys::Seq(from), hi = keys::Seq(limit);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, log_));
  it->Seek(lo_s);
  if (!it->Valid()) return std::nullopt;
  return keys::ParseSeq(it->key().ToString());
}

absl::Status RocksWal::Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                            std::vector<Entry>* out) {
  uint64_t lower, upper;
  {
    MutexLock l(&mu_);
    lower = std::max(from_seq, head_);
    upper = committed_next_;
  }
  if (lower >= upper || max_entries == 0) return absl::OkStatus();
  std::string lo = keys::Seq(lower), hi = keys::Seq(upper);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, log_));
  size_t n = 0, bytes = 0;
  for (it->Seek(lo_s); it->Valid() && n < max_entries && bytes < max_bytes; it->Next(), ++n) {
    Entry e;
    e.seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    std::string_view raw(it->value().data(), it->value().size());
    e.size = raw.size();
    bytes += raw.size();
    absl::StatusOr<Record> r = DecodeRecord(raw);
    if (r.ok()) {
      e.record = std::move(r).value();
    } else {
      e.status = r.status();
      e.raw.assign(raw);
    }
    out->push_back(std::move(e));
  }
  return FromRocks(it->status(), "scan WAL");
}

absl::Status RocksWal::Settle(const std::vector<Outcome>& outcomes) {
  if (outcomes.empty()) return absl::OkStatus();
  MutexLock settle(&settle_mu_);
  uint64_t head;
  std::map<std::string, TopicStats> totals;  // new totals of the touched counters
  {
    MutexLock l(&mu_);
    head = head_;
    for (const Outcome& o : outcomes) {
      auto [it, fresh] = totals.try_emplace(o.topic);
      if (fresh && topics_.count(o.topic)) it->second = topics_[o.topic];
      Counts& c = o.discard_reason.empty() ? it->second.delivered
                                           : it->second.discarded[o.discard_reason];
      c.count += 1;
      c.bytes += o.size;
    }
  }
  // The settled prefix [head, cand) goes in one range tombstone; the rest get point ones.
  std::set<uint64_t> settled = deleted_above_head_;
  for (const Outcome& o : outcomes) settled.insert(o.seq);
  uint64_t cand = head;
  while (settled.count(cand)) ++cand;

  rocksdb::WriteBatch wb;
  if (cand > head) wb.DeleteRange(log_, keys::Seq(head), keys::Seq(cand));
  const int64_t now_ms = options_.clock->NowMillis();
  for (const Outcome& o : outcomes) {
    if (o.seq >= cand) wb.Delete(log_, keys::Seq(o.seq));
    if (!o.discard_reason.empty()) {
      std::string v;
      PutDeadLetter(o, now_ms, &v);
      wb.Put(dead_, keys::Seq(o.seq), v);
    }
  }
  for (const Outcome& o : outcomes) {
    const TopicStats& t = totals[o.topic];
    if (o.discard_reason.empty()) {
      wb.Put(meta_, keys::Delivered(o.topic), keys::EncodeCounts(t.delivered));
    } else {
      wb.Put(meta_, keys::Discarded(o.topic, o.discard_reason),
             keys::EncodeCounts(t.discarded.at(o.discard_reason)));
    }
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  RETURN_IF_ERROR(FromRocks(db_->Write(wo, &wb), "settle WAL entries"));

  uint64_t limit;
  {
    MutexLock l(&mu_);
    for (auto& [topic, t] : totals) {
      topics_[topic].delivered = t.delivered;
      for (auto& [reason, c] : t.discarded) topics_[topic].discarded[reason] = c;
    }
    limit = committed_next_;
  }
  // Entries below cand are gone; a gap (a failed append, or entries deleted before a
  // restart) is skipped by seeking to the next live one.
  uint64_t new_head = FirstLiveAtOrAfter(cand, limit).value_or(limit);
  settled.erase(settled.begin(), settled.lower_bound(new_head));
  deleted_above_head_ = std::move(settled);
  MutexLock l(&mu_);
  head_ = std::max(head_, new_head);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> RocksWal::ReceiveTimeBound(uint64_t from_seq) {
  // Held across the seek so that no group commits in between: the answer then covers
  // the log, the group being written, and every future group.
  MutexLock l(&mu_);
  std::optional<uint64_t> first = FirstLiveAtOrAfter(std::max(from_seq, head_), committed_next_);
  if (first) {
    std::string v;
    RETURN_IF_ERROR(FromRocks(db_->Get(rocksdb::ReadOptions(), log_, keys::Seq(*first), &v),
                              "read WAL entry " + std::to_string(*first)));
    absl::StatusOr<int64_t> t = PeekReceiveTime(v);
    if (t.ok()) return *t;
    // An unreadable record cannot vouch for its time, but it was not settled when the
    // last commit point was saved, so it was received after that point.
    return saved_points_.global_ms + 1;
  }
  if (writing_receive_ms_) return *writing_receive_ms_;
  int64_t bound = std::max(
      std::max(options_.clock->NowMillis(), last_receive_ms_) + 1, receive_floor_ms_);
  receive_floor_ms_ = bound;
  return bound;
}

}  // namespace kspool::wal
