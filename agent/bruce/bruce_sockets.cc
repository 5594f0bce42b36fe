#include "agent/bruce/bruce_sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/net/listen_socket.h"
#include "agent/net/socket_file.h"

namespace kspool::agent {
namespace {

absl::Status Errno(const std::string& what, int err) {
  return absl::UnavailableError(what + ": " + std::strerror(err));
}

// Mode and group of a freshly bound socket file.
absl::Status SetOwnership(const std::string& flag, const std::string& path,
                          const BruceSocketOptions& o) {
  return ApplySocketFileOptions(path, o, SocketFileFlags{flag, "--bruce-socket-group"});
}

bool IsLoopback(const sockaddr_storage& sa) {
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

}  // namespace

absl::StatusOr<int> BindBruceDatagram(const std::string& path, const BruceSocketOptions& o) {
  const std::string flag = "--bruce-datagram-socket";
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(sa.sun_path)) {
    return absl::InvalidArgumentError(flag + ": the socket path must be 1 to " +
                                      std::to_string(sizeof(sa.sun_path) - 1) + " bytes");
  }
  std::memcpy(sa.sun_path, path.data(), path.size());
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::UnavailableError(flag + " " + path + " exists and is not a socket");
    }
    // A datagram socket someone still reads accepts a connect(); a stale one refuses.
    int probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const bool live =
        probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      return absl::UnavailableError(flag + " " + path +
                                    ": another process receives on this socket");
    }
    unlink(path.c_str());
  }
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno(flag + " " + path + ": cannot create a socket", errno);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    const int err = errno;
    close(fd);
    return Errno(flag + " " + path + ": cannot bind", err);
  }
  if (absl::Status s = SetOwnership(flag, path, o); !s.ok()) {
    close(fd);
    unlink(path.c_str());
    return s;
  }
  return fd;
}

absl::StatusOr<int> BindBruceStream(const std::string& path, const BruceSocketOptions& o) {
  absl::StatusOr<ListeningSockets> l = BindListeningSockets("unix:" + path);
  if (!l.ok()) {
    return absl::Status(l.status().code(),
                        "--bruce-stream-socket: " + std::string(l.status().message()));
  }
  if (absl::Status s = SetOwnership("--bruce-stream-socket", path, o); !s.ok()) {
    for (int fd : l->fds) close(fd);
    unlink(path.c_str());
    return s;
  }
  return l->fds.front();
}

absl::StatusOr<std::vector<int>> BindBruceTcp(const std::string& address, std::string* bound) {
  if (address.rfind("unix:", 0) == 0) {
    return absl::InvalidArgumentError("--bruce-tcp '" + address + "' is not HOST:PORT");
  }
  absl::StatusOr<ListeningSockets> l = BindListeningSockets(address);
  if (!l.ok()) {
    return absl::Status(l.status().code(), "--bruce-tcp: " + std::string(l.status().message()));
  }
  for (int fd : l->fds) {
    sockaddr_storage got{};
    socklen_t len = sizeof got;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len) != 0 || !IsLoopback(got)) {
      for (int f : l->fds) close(f);
      return absl::InvalidArgumentError(
          "--bruce-tcp '" + address +
          "': only loopback addresses (127.0.0.0/8, ::1, localhost) are allowed: the Bruce "
          "format has no authentication");
    }
  }
  *bound = l->address;
  return l->fds;
}

}  // namespace kspool::agent
