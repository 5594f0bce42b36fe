// ReadPosition: where the drain's reader is in the log (issue 42's split of the drain:
// the WAL reader's own state). It owns the cursor, the bound below which an entry met
// again may already be in the window, and the WAL reopens it has seen.
//
// The guarantee it keeps (Check): every entry in the window lies below Horizon(). The
// reader's scans take entries below the cursor or move it past what they took; a scan
// that failed after taking some raises the recheck bound past them (TakenUpTo); a
// reopen moves the cursor back to where the failed writes began and keeps the old
// cursor as the recheck bound (Reopened). So a scan from cursor() meets an entry of
// the window only below recheck_below(), where the reader looks it up (MayBeTaken).
// Thread safety: none; the drain's loop thread owns it, as DrainLoop's other state.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kspool::agent {

class ReadPosition {
 public:
  // The next sequence number the reader has not looked at (0: the head).
  uint64_t cursor() const { return cursor_; }
  uint64_t recheck_below() const { return recheck_below_; }
  // No entry at or above it was ever taken into the window.
  uint64_t Horizon() const { return std::max(cursor_, recheck_below_); }
  // Whether `seq`, met by a scan from the cursor, may be in the window already.
  bool MayBeTaken(uint64_t seq) const { return seq < recheck_below_; }

  // At the drain's start: the WAL's reopen count, so that only later reopens rewind.
  void Start(uint64_t reopens) { reopens_seen_ = reopens; }
  // Whether the WAL's reopen count `reopens` is the one last seen (the drain asks every
  // pass; only after a reopen does it ask where to rescan from).
  bool Seen(uint64_t reopens) const { return reopens == reopens_seen_; }
  // A scan from the cursor looked at everything below `next`.
  void Passed(uint64_t next) { cursor_ = std::max(cursor_, next); }
  // A scan failed after taking entries up to `last_taken`, which may lie at or above
  // the `next` it reported: a later scan must look them up, not take them again.
  void TakenUpTo(uint64_t last_taken) { recheck_below_ = std::max(recheck_below_, last_taken + 1); }
  // The WAL's reopen count is `reopens`, and entries of writes that failed before the
  // last reopen begin at `rescan_from` (wal::DrainLog::rescan_from). Returns true when
  // a reopen was not seen yet: the cursor is then at most `rescan_from` (the head if
  // more than one reopen went unseen, whose failed writes may begin lower).
  bool Reopened(uint64_t reopens, uint64_t rescan_from) {
    if (reopens == reopens_seen_) return false;
    const uint64_t from = reopens == reopens_seen_ + 1 ? rescan_from : 0;
    reopens_seen_ = reopens;
    recheck_below_ = std::max(recheck_below_, cursor_);
    if (cursor_ != 0 && from < cursor_) cursor_ = from;
    return true;
  }

  // The guarantee above, for the window's highest sequence number (nothing when the
  // window is empty).
  absl::Status Check(bool window_empty, uint64_t window_max_seq) const {
    if (window_empty || window_max_seq < Horizon()) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("window entry ", window_max_seq,
                                            " lies at or above the reader's horizon ", Horizon(),
                                            " (cursor ", cursor_, ")"));
  }

 private:
  uint64_t cursor_ = 0;
  uint64_t recheck_below_ = 0;
  uint64_t reopens_seen_ = 0;
};

}  // namespace kspool::agent
