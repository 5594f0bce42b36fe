// Routing bounds (routing_bounds.h): the rule, the pruning and the value's encoding.
#include "wal/routing_bounds.h"

#include <algorithm>

#include "wal/coding.h"

namespace kspool::wal {
namespace {
constexpr size_t kPairBytes = 12;  // fixed64 from_seq, fixed32 partitions
}  // namespace

int32_t LowestRoutedCount(const std::vector<RoutingBound>& bounds, uint64_t seq) {
  auto after = std::upper_bound(bounds.begin(), bounds.end(), seq,
                                [](uint64_t s, const RoutingBound& b) { return s < b.from_seq; });
  if (after == bounds.begin()) return 1;  // produced before any pair: any count
  int32_t lowest = INT32_MAX;
  for (auto it = std::prev(after); it != bounds.end(); ++it) lowest = std::min(lowest, it->partitions);
  return std::max(lowest, 1);
}

void AddRoutingBound(std::vector<RoutingBound>* bounds, RoutingBound next, uint64_t head) {
  if (!bounds->empty()) next.from_seq = std::max(next.from_seq, bounds->back().from_seq);
  next.partitions = std::max(next.partitions, 1);
  bounds->push_back(next);
  // The pair that holds the head, and those after it, answer for every live entry.
  size_t keep_from = 0;
  for (size_t i = 0; i < bounds->size(); ++i) {
    if ((*bounds)[i].from_seq <= head) keep_from = i;
  }
  bounds->erase(bounds->begin(), bounds->begin() + static_cast<std::ptrdiff_t>(keep_from));
  while (bounds->size() > kMaxRoutingBounds) {
    // Merged, the oldest two claim the lower count from the earlier start: never more
    // than either claimed.
    (*bounds)[1].from_seq = (*bounds)[0].from_seq;
    (*bounds)[1].partitions = std::min((*bounds)[0].partitions, (*bounds)[1].partitions);
    bounds->erase(bounds->begin());
  }
}

std::string EncodeRoutingBounds(const std::vector<RoutingBound>& bounds) {
  std::string out;
  out.reserve(bounds.size() * kPairBytes);
  for (const RoutingBound& b : bounds) {
    coding::PutFixed64(&out, b.from_seq);
    coding::PutFixed32(&out, static_cast<uint32_t>(b.partitions));
  }
  return out;
}

absl::StatusOr<std::vector<RoutingBound>> DecodeRoutingBounds(std::string_view key,
                                                              std::string_view value) {
  auto bad = [&](const std::string& why) {
    return absl::DataLossError("WAL meta key " + std::string(key) + " is not a list of routing " +
                               "bounds (FORMAT.md, \"Routing bounds\"): " + why);
  };
  if (value.size() % kPairBytes != 0) {
    return bad(std::to_string(value.size()) + " bytes, not a multiple of 12");
  }
  std::vector<RoutingBound> bounds;
  for (size_t at = 0; at < value.size(); at += kPairBytes) {
    RoutingBound b;
    b.from_seq = coding::GetFixed64(value.data() + at);
    const uint32_t partitions = coding::GetFixed32(value.data() + at + 8);
    if (partitions == 0 || partitions > INT32_MAX) {
      return bad("partition count " + std::to_string(partitions));
    }
    b.partitions = static_cast<int32_t>(partitions);
    if (!bounds.empty() && b.from_seq < bounds.back().from_seq) return bad("not in order");
    bounds.push_back(b);
  }
  return bounds;
}

}  // namespace kspool::wal
