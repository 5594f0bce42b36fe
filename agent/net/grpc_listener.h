// GrpcListener: the agent's gRPC listening sockets, accepted by the agent itself and
// handed to the gRPC server (grpc::experimental::ExternalConnectionAcceptor, which keeps
// gRPC's own handshakes, credentials, channel arguments and peer addresses).
// Guarantees:
//  - Exclusive ports: sockets are bound without SO_REUSEPORT, so a second process cannot
//    share the port and take some of the clients; a port in use (or a unix socket
//    another process answers on) fails Listen() with UNAVAILABLE naming the address.
//  - At most `max_connections` client connections are open at once. Beyond it, and when
//    the process is out of file descriptors, a new connection is accepted and closed at
//    once (the client sees a reset and retries with backoff), never queued; counted
//    through `on_refused` with the reason ("connection_limit", "out_of_descriptors";
//    "unix_peer_slots", "unix_peer_unknown" below).
//  - Connections already accepted are never closed by the listener; gRPC owns them
//    (closed when idle past --idle-timeout, or when the server shuts down).
//  - unix:PATH: the socket file gets `socket_file`'s mode and group; without TLS, every
//    call learns its peer's uid and gid (SO_PEERCRED) through UnixPeerSlots. A peer
//    beyond `unix_peer_slots` distinct (uid, gid) with open connections is refused
//    (reason "unix_peer_slots") until one of them has closed all of its connections.
// Thread safety: connections() may be called from any thread; the rest from one.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "base/log_rate_limiter.h"
#include "agent/net/reception_meter.h"
#include "agent/net/socket_file.h"
#include "agent/net/unix_peer_slots.h"

namespace kspool::agent {

// The default of GrpcListenerOptions::max_connections and of the agent's --max-connections.
inline constexpr uint64_t kDefaultMaxConnections = 1000;

struct GrpcListenerOptions {
  // HOST:PORT (IPv6 as [::1]:PORT; every address HOST resolves to is bound; port 0
  // picks a free one) or unix:PATH.
  std::string address;
  uint64_t max_connections = kDefaultMaxConnections;
  std::function<void(std::string_view reason)> on_refused;
  // Optional: meters what each TCP connection holds in partial requests (not owned;
  // must outlive the listener).
  ReceptionMeter* meter = nullptr;
  // unix:PATH only (see above); the flags are named in errors.
  SocketFileOptions socket_file;
  SocketFileFlags socket_file_flags{"--listen", "--listen-group"};
  size_t unix_peer_slots = kDefaultUnixPeerSlots;
  // Reads a unix connection's peer; tests replace it to play several users.
  std::function<absl::StatusOr<UnixPeer>(int fd)> peer_of = ReadUnixPeer;
};

class GrpcListener {
 public:
  // Binds and listens; nothing is accepted before Start().
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcListener>> Listen(
      GrpcListenerOptions options);
  // Adds the acceptors connections are handed to, once, before builder->BuildAndStart().
  // `tls`: TLS credentials, or null for plaintext (on unix:PATH: peers identified).
  void AddAcceptors(grpc::ServerBuilder* builder, std::shared_ptr<grpc::ServerCredentials> tls);
  // Accepts on a thread of its own; the server must have been built and started.
  void Start();
  // Stops accepting and closes the listening sockets (not the connections). Idempotent.
  void Stop();
  ~GrpcListener();

  // The address bound, with port 0 resolved (HOST:PORT or unix:PATH).
  const std::string& address() const { return address_; }
  // Client connections gRPC still holds open (refreshed at least once a second).
  uint64_t connections() const { return open_.load(std::memory_order_relaxed); }
  uint64_t max_connections() const { return options_.max_connections; }

 private:
  explicit GrpcListener(GrpcListenerOptions options);
  void AcceptLoop();
  void AcceptReady(int listen_fd);
  void Refuse(int fd, std::string_view reason, std::string_view detail = "");
  // The acceptor for a new connection; null (and the connection refused) when there is none.
  grpc::experimental::ExternalConnectionAcceptor* AcceptorFor(int fd, std::optional<size_t>* slot);

  GrpcListenerOptions options_;
  std::string address_;
  std::string unix_path_;  // removed at Stop()
  std::vector<int> listen_fds_;
  int wake_fd_ = -1;    // eventfd: Stop() wakes the accept thread
  int spare_fd_ = -1;   // released to accept-and-close when out of descriptors
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;  // TCP, TLS
  std::shared_ptr<UnixPeerSlots> slots_;  // plaintext unix:PATH; shared with gRPC's processors
  std::vector<std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor>> slot_acceptors_;
  struct Tracked;
  std::unique_ptr<Tracked> tracked_;  // accept thread only
  std::atomic<uint64_t> open_{0};
  LogRateLimiter refusal_log_{1, 10'000};  // a warning per 10 s; the metric counts all
  std::thread thread_;
};

}  // namespace kspool::agent
