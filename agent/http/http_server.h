// HttpServer: the agent's HTTP endpoints on --metrics-listen:
//   GET /metrics   Prometheus text format
//   GET /discards  the discard report as JSON
//   GET /status    version, agent id, uptime, WAL, Kafka and commit point as JSON
//   GET /healthz   200 "ok" while the WAL accepts writes, else 503 with the reason
// /status and /discards show per-topic data and payload bytes: with
// `HttpHandlers::detail_loopback_only` (the agent sets it with --acl or
// --http-detail-from loopback) they answer 403 to a peer whose address is not a loopback
// one (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104); /metrics and /healthz answer anyone.
// HEAD is answered like GET without the body; other methods get 405, other paths 404,
// a malformed request line 400. Every response closes its connection (Connection: close),
// so there are no idle keep-alive connections to hold.
//
// Idle, slow and hostile clients cannot stall it (the readiness probe uses /healthz):
// one thread serves every connection from an epoll loop on non-blocking sockets, and
// - a connection must deliver its whole request head within `head_timeout` of being
//   accepted (a total, so dribbling a byte at a time does not extend it) and in at most
//   `max_head_bytes` (else 431); the response must be fully sent within `write_timeout`
//   (a client that stops reading is dropped; until then its output waits in memory);
// - at most `max_connections` are open; a new one closes the one that has waited longest
//   in its current state (reading its head or having its response read), so a new probe is
//   always served.
// Each such closing is reported to `on_drop` with its reason ("head_timeout",
// "head_too_large", "write_timeout", "evicted", "accept_failed") and logged as a warning
// (at most one line per 5 s, with counts).
//
// With `tls` (HttpTls), every connection is HTTPS; the TLS handshake counts against the
// head's deadline. The process must ignore SIGPIPE (OpenSSL writes with write()).
//
// Thread safety: the handlers and `on_drop` are called on the server's one thread, one at a
// time; they must be quick (a slow handler delays every other client).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/http/http_tls.h"

namespace kspool::agent {

struct HttpHandlers {
  std::function<std::string()> metrics;
  std::function<std::string()> discards_json;
  std::function<std::string()> status_json;
  std::function<absl::Status()> health;
  std::function<void(std::string_view reason)> on_drop;  // optional
  bool detail_loopback_only = false;  // /status and /discards: loopback peers only
};

struct HttpLimits {
  std::chrono::milliseconds head_timeout{5000};
  std::chrono::milliseconds write_timeout{10000};
  size_t max_head_bytes = 8192;
  size_t max_connections = 256;
};

class HttpServer {
 public:
  // `listen` is HOST:PORT, e.g. 127.0.0.1:9411 or [::1]:0 (port 0 picks a free one).
  // INVALID_ARGUMENT if it is not HOST:PORT; UNAVAILABLE naming it if it cannot bind (the
  // port is held exclusively: no SO_REUSEPORT, so a second agent cannot share it).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, HttpHandlers handlers, HttpLimits limits = {},
      std::unique_ptr<HttpTls> tls = nullptr);
  // Stops the thread and closes the listening socket and every connection.
  ~HttpServer();

  // HOST:PORT with the bound port.
  const std::string& address() const { return address_; }

 private:
  HttpServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

}  // namespace kspool::agent
