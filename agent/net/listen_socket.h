// Listening sockets bound exclusively (no SO_REUSEPORT): the building block of the
// agent's gRPC listener. Errors are UNAVAILABLE (in use, cannot bind) or
// INVALID_ARGUMENT (not HOST:PORT / unix:PATH), naming the address.
// Thread safety: stateless functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kspool::agent {

struct ListeningSockets {
  std::vector<int> fds;   // non-blocking, close-on-exec, listening; the caller owns them
  std::string address;    // as given, with port 0 replaced by the port bound
  std::string unix_path;  // set for unix:PATH (the caller removes it when done)
};

// HOST:PORT binds every address HOST resolves to (with the same port; IPv6 sockets are
// v6-only when there are several); [v6addr]:PORT for literal IPv6; an empty HOST means
// every interface. unix:PATH removes a stale socket file first, but refuses one that
// another process still accepts connections on.
[[nodiscard]] absl::StatusOr<ListeningSockets> BindListeningSockets(const std::string& address);

}  // namespace kspool::agent
