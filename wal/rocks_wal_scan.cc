// RocksWal: the choosing scan, for a reader that keeps a read position per topic and
// passes over the entries of topics it has no room for (ARCHITECTURE.md invariant 7).
// Entries are chosen by what the record's first bytes say (topic, receive time) before
// any is decoded, so passing over an entry costs a peek, not a decode.
#include <algorithm>

#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

absl::Status RocksWal::ScanChoosing(const ScanRange& range,
                                    const std::function<ScanChoice(const ScanCandidate&)>& choose,
                                    std::vector<Entry>* out, uint64_t* next) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t lower, upper, verify_from;
  bool learn;
  {
    MutexLock l(&mu_);
    lower = std::max(range.from_seq, head_);  // nothing below the head is live
    upper = std::min(range.to_seq, committed_next_);
    verify_from = std::max(verified_upto_, head_);
    learn = lower <= verify_from && verify_from < unverified_below_;
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
  std::string lo = keys::Seq(lower), hi = keys::Seq(upper);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  ro.fill_cache = false;  // each entry is read once, in order
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->log));
  size_t offered = 0;
  it->Seek(lo_s);
  for (; it->Valid(); it->Next()) {
    const uint64_t seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    if (offered == range.max_keys) {
      *next = seq;
      RETURN_IF_ERROR(FromRocks(it->status(), "scan WAL"));
      finish(seq);
      return absl::OkStatus();
    }
    ++offered;
    std::string_view raw(it->value().data(), it->value().size());
    absl::StatusOr<int64_t> rt = PeekReceiveTime(raw);
    RecordRouting routing = PeekRouting(raw);
    ScanCandidate c{seq, routing.topic, rt.ok() ? *rt : 0, raw.size(), routing.partition,
                    routing.key};
    ScanChoice choice = choose(c);
    if (choice == ScanChoice::kStop) {
      *next = seq;
      RETURN_IF_ERROR(FromRocks(it->status(), "scan WAL"));
      finish(seq);
      return absl::OkStatus();
    }
    note(seq);
    if (choice == ScanChoice::kTake) out->push_back(DecodeEntry(seq, raw));
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "scan WAL"));
  *next = end;
  finish(std::min(end, upper));
  return absl::OkStatus();
}

}  // namespace kspool::wal
