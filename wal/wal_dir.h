// WalDir: the WAL directory's own safety, before RocksDB opens it. The WAL holds every
// message not yet in Kafka: a directory other users can write to would let them add,
// replace or remove its files. So a new WAL directory is made 0700 (missing parents as
// `mkdir -p` makes them), and a world-writable one is refused. An existing directory's
// mode is otherwise left as the operator set it (e.g. 0750 for a backup group).
// Errors: FAILED_PRECONDITION naming the directory and its mode; UNAVAILABLE when it
// cannot be created or examined. Read-only users (kspoolctl) do not call these: reading
// a WAL that is unsafe to write is still useful.
// Thread safety: stateless functions.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace kspool::wal {

// OK when `dir` does not exist yet or is not writable by others; FAILED_PRECONDITION
// when it is (also with the sticky bit: others could still add files).
[[nodiscard]] absl::Status CheckWalDirNotWorldWritable(const std::string& dir);

// Creates `dir` (0700) if missing, then CheckWalDirNotWorldWritable.
[[nodiscard]] absl::Status PrepareWalDir(const std::string& dir);

}  // namespace kspool::wal
