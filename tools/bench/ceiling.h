// The physical ceiling kspool is measured against: raw RocksDB write batches of
// `batch` messages of `size` bytes, each written with sync=true, on the same disk, in
// the same run. Thread safety: one call at a time.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kspool::bench {

struct CeilingResult {
  double messages_per_s = 0;
  double syncs_per_s = 0;
  // CPU (user + system, every thread of this process, RocksDB's flushes included) per
  // message written: the least CPU a message costs on this machine at this moment, to
  // take the agent's CPU per message as a ratio of (CPU speed on a shared VM moves by 2x
  // within an hour; docs/PERFORMANCE.md).
  double cpu_us_per_message = 0;
};

// Writes into a fresh RocksDB under `dir` for `seconds`; removes it afterwards.
absl::StatusOr<CeilingResult> MeasureCeiling(const std::string& dir, int batch, int size,
                                             double seconds);

}  // namespace kspool::bench
