#include "agent/net/reception_meter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received (glibc's lacks it)
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace kspool::agent {
namespace {

// The peer as gRPC names it in ServerContext::peer().
std::string PeerName(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "";
  char host[INET6_ADDRSTRLEN] = {};
  if (sa.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return std::string("ipv4:") + host + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return std::string("ipv6:[") + host + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "";
}

uint64_t Inode(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

bool ReceivedBytes(int fd, uint64_t* out) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  *out = info.tcpi_bytes_received;
  return true;
}

}  // namespace

ReceptionMeter::ReceptionMeter(uint64_t limit, std::function<void(uint64_t)> on_shutdown)
    : limit_(limit), on_shutdown_(std::move(on_shutdown)) {}

std::string ReceptionMeter::Normalize(std::string_view peer) {
  // gRPC may give an IPv6 peer URI-escaped: "ipv6:%5B::1%5D:5000".
  std::string out;
  out.reserve(peer.size());
  for (size_t i = 0; i < peer.size(); ++i) {
    if (peer.compare(i, 3, "%5B") == 0 || peer.compare(i, 3, "%5b") == 0) {
      out.push_back('['), i += 2;
    } else if (peer.compare(i, 3, "%5D") == 0 || peer.compare(i, 3, "%5d") == 0) {
      out.push_back(']'), i += 2;
    } else {
      out.push_back(peer[i]);
    }
  }
  return out;
}

void ReceptionMeter::Completed(std::string_view peer, uint64_t bytes) {
  const std::string key = Normalize(peer);
  MutexLock l(&mu_);
  auto it = credit_.find(key);
  if (it != credit_.end()) it->second += bytes + kFramingPerRequest;
}

void ReceptionMeter::Track(int fd) {
  Conn c;
  c.peer = PeerName(fd);
  c.ino = Inode(fd);
  if (c.peer.empty() || c.ino == 0 || !ReceivedBytes(fd, &c.received)) return;
  {
    MutexLock l(&mu_);
    credit_[c.peer] = 0;
  }
  conns_[fd] = std::move(c);
}

void ReceptionMeter::Untrack(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  {
    MutexLock l(&mu_);
    credit_.erase(it->second.peer);
  }
  conns_.erase(it);
}

void ReceptionMeter::Sweep() {
  std::unordered_map<std::string, uint64_t> credit;
  {
    MutexLock l(&mu_);
    for (auto& [peer, c] : credit_) credit[peer] = std::exchange(c, 0);
  }
  uint64_t total = 0;
  std::vector<std::pair<uint64_t, int>> by_debt;
  for (auto& [fd, c] : conns_) {
    uint64_t received = c.received;
    // Closed by gRPC (and perhaps reused by another socket): Untrack follows.
    if (Inode(fd) != c.ino || !ReceivedBytes(fd, &received)) continue;
    const uint64_t grown = c.debt + (received - c.received);
    const uint64_t paid = credit[c.peer];
    c.debt = grown > paid ? grown - paid : 0;
    c.received = received;
    total += c.debt;
    if (c.debt > 0) by_debt.emplace_back(c.debt, fd);
  }
  if (total > limit_ / 4) trim_hint_.store(true, std::memory_order_relaxed);
  if (total > limit_) {
    std::sort(by_debt.rbegin(), by_debt.rend());
    for (const auto& [debt, fd] : by_debt) {
      if (total <= limit_ / 4 * 3) break;
      // gRPC owns the descriptor; shutting the socket down makes it fail the transport,
      // free the partial requests and close the descriptor itself.
      shutdown(fd, SHUT_RDWR);
      conns_[fd].debt = 0;
      total -= debt;
      if (on_shutdown_) on_shutdown_(debt);
    }
  }
  total_debt_.store(total, std::memory_order_relaxed);
}

}  // namespace kspool::agent
