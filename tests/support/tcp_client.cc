#include "tests/support/tcp_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace kspool::testing {

TcpClient::TcpClient(const std::string& address, int receive_buffer) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return;
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    fd_ = fd;
  } else if (fd >= 0) {
    close(fd);
  }
  freeaddrinfo(res);
}

TcpClient::~TcpClient() {
  if (fd_ >= 0) close(fd_);
}

bool TcpClient::Send(const std::string& data) {
  size_t sent = 0;
  while (fd_ >= 0 && sent < data.size()) {
    ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

bool TcpClient::ReadUntilClosed(std::chrono::milliseconds timeout, std::string* out) {
  if (fd_ < 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // the deadline passed with the connection still open
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 || errno != EAGAIN;  // EOF or reset
    if (out) out->append(buf, static_cast<size_t>(n));
  }
}

std::string Exchange(const std::string& address, const std::string& request,
                     std::chrono::milliseconds timeout) {
  TcpClient c(address);
  std::string response;
  if (!c.connected()) return "";
  (void)c.Send(request);  // the server may answer and close before taking all of it
  return c.ReadUntilClosed(timeout, &response) ? response : "";
}

}  // namespace kspool::testing
