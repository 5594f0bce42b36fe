// StickyPartitioner: the partition a topic's unkeyed entries go to (issue 42's split of
// the drain: lanes per topic). They stick to one usable partition for kStickyMs, then
// move to the next usable one, round robin, as the client's own sticky partitioner
// does: per-message spreading made every batch small (T1's delivered rate fell from
// 168k to 109k msg/s).
//
// Guarantees: Pick returns only a partition `usable` accepts, below the count given;
// it keeps returning the same one while it stays usable and its time has not run out;
// when none is usable it returns nullopt and forgets the one it had.
// Thread safety: none; one per topic, owned by the drain's loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"

namespace kspool::agent {

class StickyPartitioner {
 public:
  static constexpr int64_t kStickyMs = 10;

  // The partition for the next unkeyed entry of a topic with `partition_count`
  // partitions, at monotonic time `now_ms`; nullopt when `usable` accepts none.
  std::optional<int32_t> Pick(size_t partition_count, int64_t now_ms,
                              absl::FunctionRef<bool(int32_t)> usable);

  // The partition it sticks to (-1: none).
  int32_t current() const { return current_; }

 private:
  size_t next_ = 0;  // where the round robin looks first
  int32_t current_ = -1;
  int64_t until_ms_ = 0;  // monotonic
};

}  // namespace kspool::agent
