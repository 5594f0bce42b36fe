// BruceSockets: the listening sockets of the Bruce/Dory-format input. A UNIX datagram
// socket, a UNIX stream socket, and a TCP socket on loopback addresses only. A socket
// file left at PATH is replaced only when nothing answers on it; another live process's
// socket is refused (UNAVAILABLE, naming the path). UNIX socket files get
// --bruce-socket-mode and, if given, the group --bruce-socket-group.
// Errors are UNAVAILABLE (cannot bind, in use) or INVALID_ARGUMENT (bad address, not
// loopback, unknown group), naming the flag.
// Thread safety: stateless functions; the caller owns the descriptors returned.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/net/socket_file.h"

namespace kspool::agent {

using BruceSocketOptions = SocketFileOptions;

// A non-blocking, close-on-exec UNIX datagram socket bound to `path`.
[[nodiscard]] absl::StatusOr<int> BindBruceDatagram(const std::string& path,
                                                    const BruceSocketOptions& options);
// A non-blocking, listening UNIX stream socket bound to `path`.
[[nodiscard]] absl::StatusOr<int> BindBruceStream(const std::string& path,
                                                  const BruceSocketOptions& options);
// Listening TCP sockets for HOST:PORT, which must resolve to loopback addresses only;
// `*bound` gets the address with port 0 replaced by the port bound.
[[nodiscard]] absl::StatusOr<std::vector<int>> BindBruceTcp(const std::string& address,
                                                            std::string* bound);

}  // namespace kspool::agent
