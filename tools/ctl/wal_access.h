// How kspoolctl opens a WAL directory, and walks it a page at a time.
//
// Reading commands open it read-only (wal::Options::read_only): nothing in the directory
// changes, so they work on a running agent's WAL and on a copy. Writing commands (dead
// replay, purge) open it read-write, and refuse while another process (an agent) holds
// RocksDB's lock on it, before RocksDB is touched.
// Thread safety: free functions; a Wal is thread-safe.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "wal/wal.h"

namespace kspool::ctl {

absl::StatusOr<std::unique_ptr<wal::Wal>> OpenForReading(const std::string& dir);
// After the same checks as OpenForReading; a lock held by another process is an error
// marked WalInUse (exit code 4) that names the process.
absl::StatusOr<std::unique_ptr<wal::Wal>> OpenForWriting(const std::string& dir);

// The process holding RocksDB's lock on `dir` (a POSIX record lock on DIR/LOCK), if any.
// Call it only before this process opens the WAL: closing a descriptor of LOCK would
// drop this process's own lock.
std::optional<pid_t> LockHolder(const std::string& dir);

// What a long scan shows on a terminal (see Progress).
struct ScanProgress {
  std::string what;    // e.g. "scanning the log"
  uint64_t total = 0;  // expected items, 0 if unknown
  bool streams_stdout = false;
};

// Calls `fn` for each live entry with seq >= from, in order, reading a bounded page at a
// time, until it returns false.
absl::Status ForEachEntry(wal::Inspection& wal, uint64_t from, const ScanProgress& progress,
                          const std::function<bool(const wal::Entry&)>& fn);
// The same for the dead letters.
absl::Status ForEachDeadLetter(wal::Inspection& wal, uint64_t from, const ScanProgress& progress,
                               const std::function<bool(const wal::DeadLetter&)>& fn);

}  // namespace kspool::ctl
