// Status helpers shared by every kspool component: the propagation macros that
// Debian's absl 20220623 lacks, and the one place where errno becomes an absl::Status
// (RocksDB statuses: wal/rocks_status.h). Header-only; thread-safe (no state).
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KSPOOL_CONCAT_INNER_(a, b) a##b
#define KSPOOL_CONCAT_(a, b) KSPOOL_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status kspool_status_ = (expr);                \
    if (!kspool_status_.ok()) return kspool_status_;       \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares x from an OK StatusOr, or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(KSPOOL_CONCAT_(kspool_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

namespace kspool {

// The status for a failed system call on `path`; `err` is the errno it left.
inline absl::Status ErrnoToStatus(int err, std::string_view what, std::string_view path) {
  std::string msg = std::string(what) + " " + std::string(path) + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return absl::NotFoundError(msg);
    case EEXIST: return absl::AlreadyExistsError(msg);
    case EACCES: case EPERM: return absl::PermissionDeniedError(msg);
    case ENOSPC: case EDQUOT: return absl::ResourceExhaustedError(msg);
    case EINVAL: return absl::InvalidArgumentError(msg);
    case EAGAIN: case EINTR: case EIO: return absl::UnavailableError(msg);
    default: return absl::InternalError(msg);
  }
}

}  // namespace kspool
