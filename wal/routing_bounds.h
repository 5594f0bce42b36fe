// wal::RoutingBound: how few partitions a topic may have had when this agent routed its
// keyed entries (FORMAT.md, "Routing bounds"). After a crash, a keyed entry still in the
// WAL may already be in Kafka, in the partition its key had under the partition count
// of the moment it was produced; the topic may have grown since. The drain saves a bound
// whenever the count it routes with changes, so that a restart knows which partitions to
// read back before it produces the entry again (agent/drain/drain_reconcile.cc).
//
// A topic's bounds are pairs (from_seq, partitions), in increasing from_seq: every keyed
// entry with a sequence number at or above from_seq was produced with that many
// partitions or with the count of a later pair (an entry may be produced again after a
// change). Below the first pair nothing is known: any count from 1. LowestRoutedCount()
// is that rule; PruneRoutingBounds() drops the pairs no live entry needs.
// Pure functions and values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kspool::wal {

struct RoutingBound {
  uint64_t from_seq = 0;
  int32_t partitions = 0;  // >= 1

  bool operator==(const RoutingBound& o) const {
    return from_seq == o.from_seq && partitions == o.partitions;
  }
};

// The most pairs kept per topic; beyond it the two oldest merge into the lower count.
inline constexpr size_t kMaxRoutingBounds = 32;

// The smallest partition count entry `seq` may have been produced with: the lowest
// count of its pair and every later one; 1 when no pair is at or below it.
int32_t LowestRoutedCount(const std::vector<RoutingBound>& bounds, uint64_t seq);

// Appends `next` (its from_seq raised to the last pair's if lower), then drops every
// pair before the last one at or below `head` (no live entry is below the head) and
// merges the oldest beyond kMaxRoutingBounds.
void AddRoutingBound(std::vector<RoutingBound>* bounds, RoutingBound next, uint64_t head);

std::string EncodeRoutingBounds(const std::vector<RoutingBound>& bounds);
// DATA_LOSS naming `key` when `value` is not a list of pairs (FORMAT.md).
absl::StatusOr<std::vector<RoutingBound>> DecodeRoutingBounds(std::string_view key,
                                                              std::string_view value);

}  // namespace kspool::wal
