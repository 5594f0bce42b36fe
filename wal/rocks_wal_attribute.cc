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
// whenever that match is, and a topic's last unreadable entry is charged the bytes it
// still owes, so its ledger ends exact. A count that cannot read the log fails the
// settle, which the drain retries. Cost: one scan of the live log per Settle() that carries
// unreadable records; corruption is rare, and the scan is bounded by the WAL capacity.
#include <algorithm>

#include "wal/log_cursor.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

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
  // A share of a batch record whose layout is lost is not its message's size: the count
  // owed decides, and the bytes are set from what is owed (below).
  if (it != owed.end() && it->second.count > 0) return guess;
  for (const auto& [topic, o] : owed) {
    if (o.count > 0) return topic;
  }
  return "";
}

}  // namespace

absl::Status RocksWal::CountLiveBetween(uint64_t from, uint64_t limit,
                                        std::map<std::string, Counts>* out) const {
  LogCursor c(*db_, {from, limit, /*fill_cache=*/false});
  for (c.Seek(from); c.Valid(); c.Next()) {
    const Entry e = c.Decode();
    Counts& n = (*out)[e.status.ok() ? e.record.topic : std::string()];
    n.count += 1;
    n.bytes += e.size;
  }
  return c.status("count WAL entries");
}

absl::StatusOr<const std::vector<Outcome>*> RocksWal::AttributeUnreadable(
    const std::vector<Outcome>& given, std::vector<Outcome>* fixed) {
  std::vector<size_t> unreadable;
  for (size_t i = 0; i < given.size(); ++i) {
    const Outcome& o = given[i];
    if (o.discarded() && !o.raw.empty() && !DecodeRecord(o.raw).ok()) {
      unreadable.push_back(i);
    }
  }
  if (unreadable.empty()) return &given;

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
  // A count that fails fails the settle: the caller's guess of a topic is only a guess
  // (a changed byte may spell another topic), and a read error is often transient, so
  // the drain's retry finds the owner (drain_sim seed 467567993063 charged 22 messages
  // of one topic to others when the guesses stood).
  std::map<std::string, Counts> readable;
  RETURN_IF_ERROR(CountLiveBetween(head, limit, &readable));
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
    Owed& w = owed[owner];
    // The last one a topic owes is charged the bytes it still owes, so its ledger ends
    // exact even when the sizes were estimates (log_cursor.h, size()).
    const int64_t charged = w.count == 1 ? std::max<int64_t>(w.bytes, 0)
                                         : std::clamp<int64_t>(static_cast<int64_t>(o.size), 0,
                                                               std::max<int64_t>(w.bytes, 0));
    o.size = static_cast<size_t>(charged);
    w.count -= 1;
    w.bytes -= charged;
    o.topic = std::move(owner);
  }
  return fixed;
}

}  // namespace kspool::wal
