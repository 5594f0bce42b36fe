#include "agent/net/reception_meter.h"

#include <netinet/in.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received (glibc's lacks it)
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace kspool::agent {

bool ReceptionMeter::KernelProbe(int fd, SocketReading* out) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;  // not TCP
  out->inode = st.st_ino;
  out->received = info.tcpi_bytes_received;
  out->sent = info.tcpi_bytes_acked;
  return true;
}

ReceptionMeter::ReceptionMeter(uint64_t limit, std::function<void(uint64_t)> on_shutdown,
                               Clock* clock, Probe probe,
                               std::function<std::optional<ConnectionKey>(int)> key_of)
    : limit_(limit),
      on_shutdown_(std::move(on_shutdown)),
      clock_(clock),
      probe_(std::move(probe)),
      key_of_(std::move(key_of)) {}

void ReceptionMeter::Completed(std::string_view peer, uint64_t bytes) {
  const std::optional<ConnectionKey> key = ConnectionKeyOfPeer(peer);
  if (!key) return;  // a unix socket: not metered
  MutexLock l(&mu_);
  auto it = credit_.find(*key);
  if (it != credit_.end()) it->second.bytes += Credit(bytes);
}

void ReceptionMeter::Track(int fd) {
  Conn c;
  SocketReading r;
  const std::optional<ConnectionKey> key = key_of_(fd);
  if (!key || !probe_(fd, &r)) return;
  c.key = *key;
  c.inode = r.inode;
  c.received = r.received;
  c.sent = r.sent;
  Untrack(fd);  // a descriptor gRPC closed, now reused
  {
    MutexLock l(&mu_);
    ++credit_[c.key].conns;
  }
  conns_[fd] = std::move(c);
}

void ReceptionMeter::Untrack(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  {
    MutexLock l(&mu_);
    auto k = credit_.find(it->second.key);
    if (k != credit_.end() && --k->second.conns <= 0) credit_.erase(k);
  }
  conns_.erase(it);
}

void ReceptionMeter::Sweep() {
  const int64_t now = clock_->MonotonicMillis();
  if (last_sweep_ms_ >= 0 && now > last_sweep_ms_) unforgiven_ms_ += now - last_sweep_ms_;
  last_sweep_ms_ = now;
  const uint64_t forgiven = unforgiven_ms_ * kForgivenBytesPerSecond / 1000;
  unforgiven_ms_ -= forgiven * 1000 / kForgivenBytesPerSecond;

  // Credits are taken before the sockets are read: every byte credited has been
  // received by then, so it is counted in this sweep's reading or an earlier one.
  std::unordered_map<ConnectionKey, uint64_t> credit;
  {
    MutexLock l(&mu_);
    for (auto& [key, c] : credit_) {
      if (c.bytes > 0) credit[key] = std::exchange(c.bytes, 0);
    }
  }
  uint64_t total = 0;
  std::vector<std::pair<uint64_t, int>> by_debt;
  for (auto& [fd, c] : conns_) {
    SocketReading r;
    // Closed by gRPC (and perhaps reused by another socket): Untrack follows.
    if (!probe_(fd, &r) || r.inode != c.inode) continue;
    uint64_t debt = c.debt + (r.received - c.received);
    c.received = r.received;
    // Connections sharing a key take from one credit: the sum of their debts stays
    // exact, only its split between them is not.
    if (auto it = credit.find(c.key); it != credit.end()) {
      const uint64_t paid = std::min(debt, it->second);
      debt -= paid;
      it->second -= paid;
    }
    // Cumulative counts divided: the remainders carry over from sweep to sweep.
    const uint64_t for_sent = r.sent / kSentShare - c.sent / kSentShare;
    c.sent = r.sent;
    c.debt = debt - std::min(debt, forgiven + for_sent);
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
