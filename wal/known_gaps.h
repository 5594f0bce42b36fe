// KnownGaps: what the memory knows of the log's gaps below the point where this
// incarnation's group commits began (committed_next_ at the last Open or Reopen).
//
// Below that point, the log may hold gaps the memory does not know of (entries settled
// out of order before a restart, a failed append, a settle whose failed sync RocksDB
// kept). Above it, every sequence number was written by a group commit of this
// incarnation. Contiguous scans from the head learn the gaps: below verified_upto(), a
// sequence number is present unless InGap(); Settle() looks up in the log only those of
// [verified_upto(), unverified_below()) (rocks_wal_live.cc).
// Thread safety: none of its own; RocksWal holds it under its mu_.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace kspool::wal {

class KnownGaps {
 public:
  // At Open and Reopen: nothing is known below `unverified_below` from `head` on.
  void Reset(uint64_t unverified_below, uint64_t head);

  // Whether a scan that reads every key from `lower` on (with the log's head at `head`)
  // would extend what is known, and from where: the verified edge, at or above the head.
  struct ScanPlan {
    uint64_t verify_from = 0;
    bool learn = false;
  };
  ScanPlan PlanScan(uint64_t lower, uint64_t head) const;
  // After such a scan: the gaps (key ranges absent) in [from, end). Ignored if another
  // scan, or a settle moving the head past it, got there first.
  void Note(uint64_t head, uint64_t from, uint64_t end,
            const std::vector<std::pair<uint64_t, uint64_t>>& gaps);

  uint64_t unverified_below() const { return unverified_below_; }
  uint64_t verified_upto() const { return verified_upto_; }
  // True if `seq` (below verified_upto()) lies in a known gap.
  bool InGap(uint64_t seq) const;
  // Forgets the gaps that end at or below the head: nothing there is live anyway.
  void ForgetBelow(uint64_t head);

 private:
  uint64_t unverified_below_ = 1;
  uint64_t verified_upto_ = 1;
  std::map<uint64_t, uint64_t> gaps_;  // start -> end
};

}  // namespace kspool::wal
