// KnownGaps: the gaps below the unverified point, learnt from contiguous scans.
#include "wal/known_gaps.h"

#include <algorithm>
#include <iterator>

namespace kspool::wal {

void KnownGaps::Reset(uint64_t unverified_below, uint64_t head) {
  unverified_below_ = unverified_below;
  verified_upto_ = head;
  gaps_.clear();
}

KnownGaps::ScanPlan KnownGaps::PlanScan(uint64_t lower, uint64_t head) const {
  ScanPlan p;
  p.verify_from = std::max(verified_upto_, head);
  p.learn = lower <= p.verify_from && p.verify_from < unverified_below_;
  return p;
}

void KnownGaps::Note(uint64_t head, uint64_t from, uint64_t end,
                     const std::vector<std::pair<uint64_t, uint64_t>>& gaps) {
  if (end <= from) return;
  if (std::max(verified_upto_, head) != from) return;
  for (const auto& [a, b] : gaps) {
    if (a < unverified_below_) gaps_[a] = std::min(b, unverified_below_);
  }
  verified_upto_ = end;
}

bool KnownGaps::InGap(uint64_t seq) const {
  if (gaps_.empty()) return false;
  auto g = gaps_.upper_bound(seq);
  return g != gaps_.begin() && seq < std::prev(g)->second;
}

void KnownGaps::ForgetBelow(uint64_t head) {
  while (!gaps_.empty() && gaps_.begin()->second <= head) gaps_.erase(gaps_.begin());
}

}  // namespace kspool::wal
