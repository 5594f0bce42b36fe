// The discard report (Report): what became of the messages received up to the commit
// point and after it, by topic and outcome. Plain values: GetReport() returns a copy the
// caller owns.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "wal/stats.h"

namespace kspool::wal {

inline constexpr char kOutcomeDelivered[] = "delivered";

// Settled messages of one outcome: how many, how large, received when.
struct OutcomeCounts {
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t min_receive_ms = 0;  // meaningful when count > 0
  int64_t max_receive_ms = 0;
  void Add(const OutcomeCounts& o);
};
// topic -> outcome ("delivered" or a discard reason) -> counts.
using OutcomeTable = std::map<std::string, std::map<std::string, OutcomeCounts>>;

// The discard report built on the commit point. `at_or_before` is cumulative and only
// grows: for two reports, the difference is exactly what happened to the messages
// received between their commit points, also across restarts. `commit_point_ms` is the
// point the counts are exact at: the saved global commit point, or an earlier bucket
// boundary when the after table was coarsened (Options::max_report_buckets); it never
// decreases.
struct Report {
  int64_t commit_point_ms = 0;
  OutcomeTable at_or_before;  // messages received at or before commit_point_ms
  OutcomeTable after;         // settled messages received after it (so far)
  std::map<std::string, TopicStats> ledger;
};

}  // namespace kspool::wal
