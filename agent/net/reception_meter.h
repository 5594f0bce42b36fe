// ReceptionMeter: bounds the bytes that gRPC client connections can make the agent
// hold in requests not yet received in full. gRPC 1.51 reads every request message
// into memory as fast as clients send it, and its ResourceQuota does not hold a bound
// (measured: 24 connections x 50 stalled 60 MB streams took 0.4 to 3.8 GB with a
// 128 MiB quota). So the meter watches each TCP connection from outside:
//   debt = bytes the kernel received on it - bytes of requests it completed,
// kept >= 0 (a connection cannot bank credit). The sum of debts is what clients hold
// in partial requests. When it passes `limit`, the connections with the largest debts
// are shut down (their partial requests freed; their clients see UNAVAILABLE and
// retry), until the sum is under 3/4 of the limit. Connections that complete their
// requests carry almost no debt and are never chosen.
// Thread safety: Completed() from any thread; the rest from the listener's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/mutex.h"

namespace kspool::agent {

class ReceptionMeter {
 public:
  // `on_shutdown(debt)` is called for each connection shut down.
  ReceptionMeter(uint64_t limit, std::function<void(uint64_t debt)> on_shutdown);

  // A request of `bytes` (its serialized size) arrived in full on the connection whose
  // gRPC peer string is `peer` ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000").
  void Completed(std::string_view peer, uint64_t bytes);

  // A TCP connection handed to gRPC; unix sockets are not metered.
  void Track(int fd);
  void Untrack(int fd);
  // Reads every tracked connection's received bytes and enforces the limit.
  void Sweep();

  uint64_t debt() const { return total_debt_.load(std::memory_order_relaxed); }
  // True (once) if, since the last call, connections held more than a quarter of the
  // limit or some were shut down: then freeing their buffers is worth handing memory
  // back to the system (malloc_trim, which stalls allocations while it runs, so it is
  // not done for every client that leaves).
  bool TakeTrimHint() { return trim_hint_.exchange(false, std::memory_order_relaxed); }
  // A gRPC peer string as the meter keys it ("ipv6:%5B::1%5D:5000" -> "ipv6:[::1]:5000").
  static std::string Normalize(std::string_view peer);
  uint64_t limit() const { return limit_; }

 private:
  struct Conn {
    std::string peer;
    uint64_t ino = 0;       // the socket's identity: the descriptor may be reused
    uint64_t received = 0;  // kernel's count at the last sweep
    uint64_t debt = 0;
  };
  // Framing per request that the serialized size does not include (HTTP/2 frame
  // headers, HPACK, the gRPC prefix), credited generously: a busy connection must not
  // drift into debt; the clamp at 0 keeps the surplus from becoming credit.
  static constexpr uint64_t kFramingPerRequest = 128;

  const uint64_t limit_;
  std::function<void(uint64_t)> on_shutdown_;
  std::unordered_map<int, Conn> conns_;  // listener thread only
  Mutex mu_;
  std::unordered_map<std::string, uint64_t> credit_ ABSL_GUARDED_BY(mu_);  // by peer
  std::atomic<uint64_t> total_debt_{0};
  std::atomic<bool> trim_hint_{false};
};

}  // namespace kspool::agent
