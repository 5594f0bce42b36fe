// StickyPartitioner (sticky_partitioner.h).
#include "agent/drain/sticky_partitioner.h"

namespace kspool::agent {

std::optional<int32_t> StickyPartitioner::Pick(size_t partition_count, int64_t now_ms,
                                               absl::FunctionRef<bool(int32_t)> usable) {
  if (current_ >= 0 && static_cast<size_t>(current_) < partition_count && now_ms < until_ms_ &&
      usable(current_)) {
    return current_;
  }
  for (size_t i = 0; i < partition_count; ++i) {
    const size_t p = (next_ + i) % partition_count;
    if (usable(static_cast<int32_t>(p))) {
      next_ = p + 1;
      current_ = static_cast<int32_t>(p);
      until_ms_ = now_ms + kStickyMs;
      return current_;
    }
  }
  current_ = -1;
  return std::nullopt;
}

}  // namespace kspool::agent
