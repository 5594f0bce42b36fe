// RocksDB's diagnostics (its "info log") as messages handed to a sink of the caller's,
// instead of the LOG files RocksDB would otherwise write into the WAL directory. On a
// full volume those files did harm: a LOG write that failed once made RocksDB's next
// log line abort the process (its file writer asserts that no write follows a failed
// one), and every open, also a failed one, renamed LOG to another LOG.old.* that nothing
// removed. With a sink nothing of the info log touches the volume.
// Thread safety: the logger may be called from any RocksDB thread at once; so is the
// sink. Ownership: RocksDB and the WAL share the logger (shared_ptr).
#pragma once

#include <memory>

#include "rocksdb/env.h"
#include "wal/options.h"

namespace kspool::wal {

// A logger that formats each message (at least of level info; RocksDB's debug messages
// are dropped) and hands it to `sink`. A null sink: warnings and errors go to stderr,
// the rest is dropped (tools; the agent passes its own log).
std::shared_ptr<rocksdb::Logger> NewInfoLog(InfoLogSink sink);

}  // namespace kspool::wal
