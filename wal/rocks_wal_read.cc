// RocksWal: reading the log in sequence order: Scan, the choosing scan of the drain
// (ScanChoosing), the newest entry, and the recount of the live entries.
//
// The log is used as a queue, so deletes pile up at its head: scans always start at the
// oldest live entry (iterate_lower_bound). The choosing scan is for a reader that keeps
// a read position per topic and passes over the entries of topics it has no room for:
// entries are chosen by what the record's first bytes say (topic, receive time) before
// any is decoded, so passing over an entry costs a peek, not a decode. LogCursor
// (log_cursor.h) reads version-1 entries and batch records alike.
#include <algorithm>

#include "wal/keys.h"
#include "wal/log_cursor.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

absl::StatusOr<std::optional<uint64_t>> RocksWal::FirstLiveAtOrAfter(uint64_t from,
                                                                     uint64_t limit) const {
  if (from >= limit || !db_) return std::nullopt;
  LogCursor c(*db_, {from, limit});
  c.Seek(from);
  // A cursor that stopped on an error is not Valid() either: only an OK status means
  // that nothing is live in [from, limit).
  RETURN_IF_ERROR(c.status("WAL " + options_.dir + ": find the first live entry at or after " +
                           std::to_string(from)));
  if (!c.Valid()) return std::nullopt;
  return c.seq();
}

absl::Status RocksWal::Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                            std::vector<Entry>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t lower, upper, verify_from;
  bool learn;
  {
    MutexLock l(&mu_);
    lower = std::max(from_seq, ledger_.head());
    upper = tail_.committed_next();
    const KnownGaps::ScanPlan plan = known_gaps_.PlanScan(lower, ledger_.head());
    verify_from = plan.verify_from;
    learn = plan.learn;
  }
  if (lower >= upper || max_entries == 0) return absl::OkStatus();
  // Each entry is read once, in order: caching its blocks only evicts useful ones.
  LogCursor c(*db_, {lower, upper, /*fill_cache=*/false});
  out->reserve(out->size() + std::min<uint64_t>({max_entries, upper - lower, 65536}));
  const size_t first = out->size();
  size_t n = 0, bytes = 0;
  for (c.Seek(lower); c.Valid() && n < max_entries && bytes < max_bytes; c.Next(), ++n) {
    out->push_back(c.Decode());
    bytes += out->back().size;
  }
  RETURN_IF_ERROR(c.status("scan WAL"));
  // Every key in [lower, end) was seen; after a restart that tells Settle() the gaps.
  if (learn) {
    const uint64_t end = !c.Valid() ? upper : (out->size() > first ? out->back().seq + 1 : lower);
    NoteScanned(verify_from, end, *out, first);
  }
  return absl::OkStatus();
}

absl::Status RocksWal::CountLive(std::map<std::string, Counts>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t head;
  {
    MutexLock l(&mu_);
    head = ledger_.head();
  }
  return CountLiveBetween(head, UINT64_MAX, out);
}

absl::Status RocksWal::ScanChoosing(const ScanRange& range,
                                    const std::function<ScanChoice(const ScanCandidate&)>& choose,
                                    std::vector<Entry>* out, uint64_t* next) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t lower, upper, verify_from;
  bool learn;
  {
    MutexLock l(&mu_);
    lower = std::max(range.from_seq, ledger_.head());  // nothing below the head is live
    upper = std::min(range.to_seq, tail_.committed_next());
    const KnownGaps::ScanPlan plan = known_gaps_.PlanScan(lower, ledger_.head());
    verify_from = plan.verify_from;
    learn = plan.learn;
  }
  // After a restart, a scan from the verified edge tells Settle() which keys exist
  // (rocks_wal_live.cc): every key offered is present, every one passed over is not.
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  uint64_t expect = verify_from;
  auto note = [&](uint64_t seq) {
    if (!learn || seq < verify_from) return;
    if (seq > expect) gaps.emplace_back(expect, seq);
    expect = seq + 1;
  };
  auto finish = [&](uint64_t next) {
    if (!learn || next <= verify_from) return;
    if (next > expect) gaps.emplace_back(expect, next);
    NoteGaps(verify_from, next, gaps);
  };
  // Once the whole range was offered: its end, or as far as anything is written.
  const uint64_t end = std::max(range.from_seq, upper);
  if (lower >= upper) {
    *next = end;
    return absl::OkStatus();
  }
  *next = lower;
  if (range.max_keys == 0) return absl::OkStatus();
  LogCursor c(*db_, {lower, upper, /*fill_cache=*/false});  // each entry is read once, in order
  size_t offered = 0;
  for (c.Seek(lower); c.Valid(); c.Next()) {
    const uint64_t seq = c.seq();
    if (offered == range.max_keys) {
      *next = seq;
      RETURN_IF_ERROR(c.status("scan WAL"));
      finish(seq);
      return absl::OkStatus();
    }
    ++offered;
    // A batch record's time only once its checksum vouches for it (cheap: it was checked
    // when the record was read): a chooser bounds commit points and ages by it, and a
    // salvaged time may be anything, even years ahead. A version-1 record's is read
    // unverified (checking it decodes the entry; only older versions wrote them).
    absl::StatusOr<int64_t> rt = c.record().batch ? c.VerifiedReceiveTime() : c.ReceiveTime();
    RecordRouting routing = c.Routing();
    ScanCandidate cand{seq,      routing.topic,     rt.ok() ? *rt : 0,
                       c.size(), routing.partition, routing.key};
    ScanChoice choice = choose(cand);
    if (choice == ScanChoice::kStop) {
      *next = seq;
      RETURN_IF_ERROR(c.status("scan WAL"));
      finish(seq);
      return absl::OkStatus();
    }
    note(seq);
    if (choice == ScanChoice::kTake) out->push_back(c.Decode());
    *next = seq + 1;  // as far as an iterator error leaves it (drain_log.h)
  }
  RETURN_IF_ERROR(c.status("scan WAL"));
  *next = end;
  finish(std::min(end, upper));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Entry>> RocksWal::Newest() {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  const auto [lower, upper] = live_range();
  if (lower >= upper) return std::nullopt;
  LogCursor c(*db_, {lower, upper});
  c.SeekToLast();
  RETURN_IF_ERROR(c.status("read the newest WAL entry"));
  if (!c.Valid()) return std::nullopt;
  return c.Decode();
}

}  // namespace kspool::wal
