// RocksWal: the topic of an entry whose record cannot be read, found from the ledger.
//
// A corrupt record is discarded into the dead letters like any other, but its topic —
// the ledger line that counted it as accepted — may be unreadable (SalvageTopic gives
// "") or misread (a flipped byte spells another topic). Counting it under "" or the
// wrong topic would leave its real topic owing one entry forever. The counters know
// better: for each topic, accepted − delivered − discarded entries are live; a scan of
// the live log finds how many of them are readable; a topic with fewer readable live
// entries than its counters hold owns the unreadable ones. So every topic's count of
// discarded corrupt entries is exact. Which of several unreadable entries is charged to
// which owner is a best match (the caller's guess, then the size); bytes are exact
// whenever that match is. Cost: one scan of the live log per Settle() that carries
// unreadable records; corruption is rare, and the scan is bounded by the WAL capacity.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

struct Owed {
  int64_t count = 0;
  int64_t bytes = 0;
};

// The topic to charge an unreadable entry of `size` bytes to, or "" if none owes one.
std::string PickOwner(const std::map<std::string, Owed>& owed, const std::string& guess,
                      uint64_t size) {
  const auto fits = [size](const Owed& o) {
    return o.count > 0 && o.bytes >= static_cast<int64_t>(size);
  };
  auto it = owed.find(guess);
  if (it != owed.end() && fits(it->second)) return guess;
  for (const auto& [topic, o] : owed) {
    if (o.count == 1 && o.bytes == static_cast<int64_t>(size)) return topic;
  }
  for (const auto& [topic, o] : owed) {
    if (fits(o)) return topic;
  }
  return "";
}

}  // namespace

absl::Status RocksWal::CountLiveBetween(uint64_t from, uint64_t limit,
                                        std::map<std::string, Counts>* out) const {
  std::string lo = keys::Seq(from), hi = keys::Seq(limit);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro = db_->IteratorOptions(db_->log);
  ro.iterate_lower_bound = &lo_s;
  if (limit != UINT64_MAX) ro.iterate_upper_bound = &hi_s;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->log));
  for (it->Seek(lo_s); it->Valid(); it->Next()) {
    std::string_view raw(it->value().data(), it->value().size());
    absl::StatusOr<Record> rec = DecodeRecord(raw);
    Counts& c = (*out)[rec.ok() ? rec->topic : std::string()];
    c.count += 1;
    c.bytes += raw.size();
  }
  return FromRocks(it->status(), "count WAL entries");
}

const std::vector<Outcome>& RocksWal::AttributeUnreadable(const std::vector<Outcome>& given,
                                                          std::vector<Outcome>* fixed) {
  std::vector<size_t> unreadable;
  for (size_t i = 0; i < given.size(); ++i) {
    const Outcome& o = given[i];
    if (o.discarded() && !o.raw.empty() && !DecodeRecord(o.raw).ok()) {
      unreadable.push_back(i);
    }
  }
  if (unreadable.empty()) return given;

  // Counters and the log's extent read together: appends update both under mu_, and
  // Settle (whose lock the caller holds) is the only other writer of either.
  std::map<std::string, TopicStats> topics;
  uint64_t head, limit;
  {
    MutexLock l(&mu_);
    topics = ledger_.topics();
    head = ledger_.head();
    limit = tail_.committed_next();
  }
  std::map<std::string, Counts> readable;
  if (absl::Status s = CountLiveBetween(head, limit, &readable); !s.ok()) {
    return given;  // the caller's guesses stand; the Settle that follows reads the same log
  }
  std::map<std::string, Owed> owed;
  for (const auto& [topic, ts] : topics) {
    const Counts pending = ts.pending();
    const Counts& seen = readable[topic];
    owed[topic] = {static_cast<int64_t>(pending.count - seen.count),
                   static_cast<int64_t>(pending.bytes - seen.bytes)};
  }
  *fixed = given;
  for (size_t i : unreadable) {
    Outcome& o = (*fixed)[i];
    std::string owner = PickOwner(owed, o.topic, o.size);
    if (owner.empty()) continue;  // no topic owes it (no longer live): the guess stands
    owed[owner].count -= 1;
    owed[owner].bytes -= static_cast<int64_t>(o.size);
    o.topic = std::move(owner);
  }
  return *fixed;
}

}  // namespace kspool::wal
