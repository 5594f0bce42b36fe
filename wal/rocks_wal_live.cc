// RocksWal: which outcomes given to Settle() are for live entries.
//
// Settle() must be idempotent (ARCHITECTURE.md invariant 9): the drain applies a batch again
// after a failed sync, and RocksDB may have kept that batch. An outcome counts only if
// its entry is live: at or above the head, below the committed end, not settled already,
// and present in the log.
//
// The memory vouches for presence above the unverified point (seqs written by this
// incarnation's group commits; their deletions are in the head and deleted_above_head_).
// Below it, after an Open or Reopen, the log may hold gaps the memory does not know of.
// The drain reads that region with contiguous scans from the head anyway, and each such
// scan tells exactly which keys exist: NoteScanned() records the gaps, so draining a
// backlog after a restart costs no extra reads. Only seqs settled without having been
// scanned (a retry right after a Reopen, before the drain read again) are looked up in
// the log (LogCursor: a seek per record). Measured with one key per message and MultiGet
// (200k entries, 2k outcomes per call, 2 cores): ~0.4 ms of CPU per call either way;
// looking every seq up would make it ~4 ms. Not measured again with batch records.
#include <algorithm>
#include <iterator>
#include <unordered_set>

#include "wal/log_cursor.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

void RocksWal::NoteScanned(uint64_t from, uint64_t end, const std::vector<Entry>& out,
                           size_t first) {
  if (end <= from) return;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  uint64_t expect = from;
  for (size_t i = first; i < out.size(); ++i) {
    if (out[i].seq < from) continue;
    if (out[i].seq > expect) gaps.emplace_back(expect, out[i].seq);
    expect = out[i].seq + 1;
  }
  if (end > expect) gaps.emplace_back(expect, end);
  NoteGaps(from, end, gaps);
}

void RocksWal::NoteGaps(uint64_t from, uint64_t end,
                        const std::vector<std::pair<uint64_t, uint64_t>>& gaps) {
  if (end <= from) return;
  MutexLock l(&mu_);
  known_gaps_.Note(ledger_.head(), from, end, gaps);
}

absl::StatusOr<const std::vector<Outcome>*> RocksWal::LiveOutcomes(
    const std::vector<Outcome>& outcomes, std::vector<uint64_t>* seqs,
    std::vector<Outcome>* kept) const {
  uint64_t head, limit, unverified_below, verified_upto;
  {
    MutexLock l(&mu_);
    head = ledger_.head();
    limit = tail_.committed_next();
    unverified_below = known_gaps_.unverified_below();
    verified_upto = known_gaps_.verified_upto();
  }
  seqs->clear();
  seqs->reserve(outcomes.size());
  for (const Outcome& o : outcomes) seqs->push_back(o.seq);
  if (!std::is_sorted(seqs->begin(), seqs->end())) std::sort(seqs->begin(), seqs->end());

  std::vector<uint64_t> gone;        // not live
  std::vector<uint64_t> scanned;     // below verified_upto: present unless in a gap
  std::vector<uint64_t> unverified;  // to look up in the log; sorted
  bool repeated = false;
  for (size_t i = 0; i < seqs->size(); ++i) {
    const uint64_t seq = (*seqs)[i];
    if (i > 0 && seq == (*seqs)[i - 1]) {
      repeated = true;
      continue;
    }
    if (seq < head || seq >= limit) {
      gone.push_back(seq);
      continue;
    }
    // deleted_above_head_ is a few runs (SeqRuns), even while one entry holds the head.
    if (deleted_above_head_.Contains(seq)) {
      gone.push_back(seq);
    } else if (seq < unverified_below) {
      (seq < verified_upto ? scanned : unverified).push_back(seq);
    }
  }

  if (!scanned.empty()) {
    MutexLock l(&mu_);
    for (uint64_t seq : scanned) {
      if (known_gaps_.InGap(seq)) gone.push_back(seq);
    }
  }
  if (!unverified.empty()) {
    // In order, so that one cursor position answers for every number up to it.
    LogCursor c(*db_, {unverified.front(), limit, /*fill_cache=*/false});
    for (uint64_t seq : unverified) {
      if (!c.Valid() || c.seq() < seq) c.Seek(seq);
      RETURN_IF_ERROR(c.status("look up WAL entry " + std::to_string(seq)));
      if (!c.Valid() || c.seq() != seq) gone.push_back(seq);
    }
  }
  if (gone.empty() && !repeated) return &outcomes;

  // Rare: after a failed sync, a reopen or a restart, or a caller's repeat.
  std::sort(gone.begin(), gone.end());
  kept->clear();
  std::unordered_set<uint64_t> seen;
  for (const Outcome& o : outcomes) {
    if (std::binary_search(gone.begin(), gone.end(), o.seq)) continue;
    if (repeated && !seen.insert(o.seq).second) continue;
    kept->push_back(o);
  }
  seqs->erase(std::unique(seqs->begin(), seqs->end()), seqs->end());
  std::vector<uint64_t> live;
  live.reserve(seqs->size());
  std::set_difference(seqs->begin(), seqs->end(), gone.begin(), gone.end(),
                      std::back_inserter(live));
  seqs->swap(live);
  return kept;
}

}  // namespace kspool::wal
