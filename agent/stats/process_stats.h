// ProcessStats: this process's standard figures as the Prometheus client libraries
// export them (process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds), read from /proc at
// the moment of the call. prometheus-cpp has no process collector, so the agent reads
// them itself at scrape time (a few small /proc reads: nothing on the hot path).
// Linux only. Thread safety: a free function, callable from any thread.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace kspool::agent {

struct ProcessStats {
  double cpu_seconds = 0;         // user + system time of every thread, exited ones too
  uint64_t resident_bytes = 0;    // resident set size
  uint64_t open_fds = 0;          // entries in /proc/self/fd
  uint64_t max_fds = 0;           // RLIMIT_NOFILE soft limit
  double start_time_seconds = 0;  // Unix time the process started
};

// An error names the /proc file that could not be read or parsed.
[[nodiscard]] absl::StatusOr<ProcessStats> ReadProcessStats();

}  // namespace kspool::agent
