// SocketFile: the mode and group of the unix socket files the agent listens on (the gRPC
// socket: --listen-mode/--listen-group; the Bruce sockets: --bruce-socket-mode/-group),
// so that an operator decides who may connect (connect(2) needs write permission).
// Errors name the flag: INVALID_ARGUMENT (no such group), UNAVAILABLE (chmod/chown).
// Thread safety: stateless functions.
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kspool::agent {

struct SocketFileOptions {
  mode_t mode = 0660;
  std::string group;  // empty: the agent's own
};

// The flags an error names: `socket_flag` (the path's, e.g. "--listen") and the group's.
struct SocketFileFlags {
  std::string socket_flag;
  std::string group_flag;
};

// The id of group `name`; INVALID_ARGUMENT "no group named 'NAME'" when there is none.
[[nodiscard]] absl::StatusOr<gid_t> LookupGroup(const std::string& name);

// Gives the freshly bound socket file `path` the group (if any) and then the mode.
[[nodiscard]] absl::Status ApplySocketFileOptions(const std::string& path,
                                                  const SocketFileOptions& options,
                                                  const SocketFileFlags& flags);

}  // namespace kspool::agent
