#include "agent/net/listen_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kspool::agent {
namespace {

constexpr int kBacklog = 1024;

absl::Status Errno(const std::string& what, const std::string& address, int err) {
  std::string msg = what + " " + address + ": " + std::strerror(err);
  if (err == EADDRINUSE) {
    msg += " (another kspool agent, or another process, listens there; ports are not "
           "shared)";
  }
  return absl::UnavailableError(msg);
}

void CloseAll(std::vector<int>& fds) {
  for (int fd : fds) close(fd);
  fds.clear();
}

absl::StatusOr<ListeningSockets> BindUnix(const std::string& address) {
  ListeningSockets out;
  out.address = address;
  out.unix_path = address.substr(5);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (out.unix_path.empty() || out.unix_path.size() >= sizeof(sa.sun_path)) {
    return absl::InvalidArgumentError("--listen " + address + ": the socket path must be 1 to " +
                                      std::to_string(sizeof(sa.sun_path) - 1) + " bytes");
  }
  std::memcpy(sa.sun_path, out.unix_path.data(), out.unix_path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("cannot create a socket for", address, errno);
  struct stat st {};
  if (lstat(out.unix_path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      close(fd);
      return absl::UnavailableError("--listen " + address + ": " + out.unix_path +
                                    " exists and is not a socket");
    }
    // A socket file someone still accepts on is in use; an unanswered one is stale.
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      close(fd);
      return Errno("cannot listen on", address, EADDRINUSE);
    }
    unlink(out.unix_path.c_str());
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, kBacklog) != 0) {
    const int err = errno;
    close(fd);
    return Errno("cannot listen on", address, err);
  }
  out.fds.push_back(fd);
  return out;
}

}  // namespace

absl::StatusOr<ListeningSockets> BindListeningSockets(const std::string& address) {
  if (address.rfind("unix:", 0) == 0) return BindUnix(address);
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("--listen '" + address + "' is not HOST:PORT or unix:PATH");
  }
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      port.size() > 5 || std::stoul(port) > 65535) {
    return absl::InvalidArgumentError("--listen '" + address + "': port '" + port +
                                      "' is not a number from 0 to 65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
      rc != 0) {
    return absl::InvalidArgumentError("--listen '" + address + "': cannot resolve '" + host +
                                      "': " + gai_strerror(rc));
  }
  ListeningSockets out;
  const bool several = res && res->ai_next;
  int bound_port = std::stoi(port);
  absl::Status error;
  for (addrinfo* ai = res; ai && error.ok(); ai = ai->ai_next) {
    sockaddr_storage sa{};
    std::memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
    if (ai->ai_family == AF_INET) reinterpret_cast<sockaddr_in*>(&sa)->sin_port = htons(bound_port);
    if (ai->ai_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port = htons(bound_port);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = Errno("cannot create a socket for", address, errno);
      break;
    }
    out.fds.push_back(fd);
    // SO_REUSEADDR lets a restarted agent bind past its old connections in TIME_WAIT;
    // on Linux it does not let two sockets listen on one port (SO_REUSEPORT would).
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && several) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, reinterpret_cast<sockaddr*>(&sa), ai->ai_addrlen) != 0 || listen(fd, kBacklog) != 0) {
      error = Errno("cannot listen on", address, errno);
      break;
    }
    if (bound_port == 0) {
      sockaddr_storage got{};
      socklen_t len = sizeof got;
      getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
      bound_port = ntohs(got.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&got)->sin_port
                                                  : reinterpret_cast<sockaddr_in6*>(&got)->sin6_port);
    }
  }
  freeaddrinfo(res);
  if (!error.ok()) {
    CloseAll(out.fds);
    return error;
  }
  out.address = address.substr(0, colon) + ":" + std::to_string(bound_port);
  return out;
}

}  // namespace kspool::agent
