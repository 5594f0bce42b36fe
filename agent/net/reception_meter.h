// ReceptionMeter: bounds the bytes that gRPC client connections can make the agent
// hold in requests not yet received in full. gRPC 1.51 reads every request message
// into memory as fast as clients send it, and its ResourceQuota does not hold a bound
// (measured: 24 connections x 50 stalled 60 MB streams took 0.4 to 3.8 GB with a
// 128 MiB quota). So the meter watches each TCP connection from outside:
//   debt = bytes the kernel received on it - bytes of the requests it completed,
// kept >= 0 (a connection cannot bank credit). The sum of debts is what clients hold
// in partial requests. When it passes `limit`, the connections with the largest debts
// are shut down (their partial requests freed; their clients see UNAVAILABLE and
// retry), until the sum is under 3/4 of the limit.
// Accounting guarantees:
//  - The listener tracks the connection it accepted (its descriptor, checked against
//    the socket's inode); a completed call is credited to it through ConnectionKey
//    (connection_key.h), the peer's address and port as both the socket and gRPC name
//    them: IPv4, IPv4 on a dual-stack [::] socket, IPv6, plaintext or TLS alike. Two
//    live connections with one key (a client reusing its address and port towards two
//    of the agent's addresses) share their credit: their summed debt stays exact.
//  - A completed request is credited with its serialized size plus its framing on
//    the wire, estimated generously: kFramingPerRequest (HEADERS, the gRPC prefix,
//    END_STREAM) and 1/kFramingShare of its size (DATA frame headers, TLS records).
//  - What no request accounts for is forgiven: 1/kSentShare of the bytes the client
//    acknowledged receiving (its flow-control updates and ping acks answer what the
//    agent sends) and kForgivenBytesPerSecond (the TLS handshake, keepalives). So a
//    connection that completes its requests carries no growing residue however long
//    it lives, while one holding a stalled request is forgiven no faster than that.
//  - Unix sockets are not metered: the kernel keeps no received-byte count for them.
// Thread safety: Completed() from any thread; the rest from the listener's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "agent/net/connection_key.h"
#include "base/clock.h"
#include "base/mutex.h"

namespace kspool::agent {

class ReceptionMeter {
 public:
  // What the meter reads of a connection's socket.
  struct SocketReading {
    uint64_t inode = 0;     // the socket's identity (a descriptor number may be reused)
    uint64_t received = 0;  // bytes the kernel received on it so far
    uint64_t sent = 0;      // bytes the peer acknowledged so far
  };
  // Reads `fd`; false when it is not a TCP socket (or no longer open).
  using Probe = std::function<bool(int fd, SocketReading* out)>;
  static bool KernelProbe(int fd, SocketReading* out);

  static constexpr uint64_t kFramingPerRequest = 256;
  static constexpr uint64_t kFramingShare = 64;
  static constexpr uint64_t kSentShare = 256;
  static constexpr uint64_t kForgivenBytesPerSecond = 4;

  // `on_shutdown(debt)` is called for each connection shut down. `clock` (monotonic)
  // times the forgiveness; `probe` and `key_of` read sockets (tests replace them).
  ReceptionMeter(uint64_t limit, std::function<void(uint64_t debt)> on_shutdown,
                 Clock* clock = SystemClock::Default(), Probe probe = KernelProbe,
                 std::function<std::optional<ConnectionKey>(int fd)> key_of = ConnectionKeyOfSocket);

  // A request of `bytes` (its serialized size) arrived in full on the connection whose
  // gRPC peer string is `peer` ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000", ...).
  void Completed(std::string_view peer, uint64_t bytes);
  // What Completed credits for a request of `bytes`.
  static uint64_t Credit(uint64_t bytes) {
    return bytes + kFramingPerRequest + (bytes + 5) / kFramingShare;
  }

  // A connection handed to gRPC; ignored unless it is TCP.
  void Track(int fd);
  void Untrack(int fd);
  // Reads every tracked connection's received bytes and enforces the limit.
  void Sweep();

  uint64_t debt() const { return total_debt_.load(std::memory_order_relaxed); }
  // Connections tracked (for tests).
  size_t tracked() const { return conns_.size(); }
  // True (once) if, since the last call, connections held more than a quarter of the
  // limit or some were shut down: then freeing their buffers is worth handing memory
  // back to the system (malloc_trim, which stalls allocations while it runs, so it is
  // not done for every client that leaves).
  bool TakeTrimHint() { return trim_hint_.exchange(false, std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  struct Conn {
    ConnectionKey key;
    uint64_t inode = 0;
    uint64_t received = 0;  // kernel's counts at the last sweep
    uint64_t sent = 0;
    uint64_t debt = 0;
  };
  struct KeyCredit {
    uint64_t bytes = 0;  // credited since the last sweep
    int conns = 0;       // tracked connections with this key
  };

  const uint64_t limit_;
  std::function<void(uint64_t)> on_shutdown_;
  Clock* const clock_;
  const Probe probe_;
  const std::function<std::optional<ConnectionKey>(int)> key_of_;
  std::unordered_map<int, Conn> conns_;  // listener thread only
  int64_t last_sweep_ms_ = -1;           // listener thread only
  uint64_t unforgiven_ms_ = 0;           // listener thread only: time not yet forgiven
  Mutex mu_;
  std::unordered_map<ConnectionKey, KeyCredit> credit_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> total_debt_{0};
  std::atomic<bool> trim_hint_{false};
};

}  // namespace kspool::agent
