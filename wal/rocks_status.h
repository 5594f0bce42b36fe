// FromRocks: the one place where a RocksDB status becomes an absl::Status.
// Header-only; thread-safe (no state).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "base/status.h"
#include "rocksdb/status.h"

namespace kspool {

// Maps a RocksDB status to the closest absl code. A full disk and every I/O error are
// UNAVAILABLE: they are conditions the caller may retry after, not caller mistakes.
inline absl::Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = std::string(context) + ": " + s.ToString();
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(msg);
  if (s.IsNotSupported()) return absl::UnimplementedError(msg);
  if (s.IsIOError() || s.IsNoSpace() || s.IsBusy() || s.IsTimedOut() || s.IsTryAgain() ||
      s.IsIncomplete() || s.IsAborted() || s.IsShutdownInProgress()) {
    return absl::UnavailableError(msg);
  }
  return absl::InternalError(msg);
}

}  // namespace kspool
