// HttpTls: TLS for the metrics/HTTP listener (--metrics-tls-cert, --metrics-tls-key), on
// OpenSSL directly (the HTTP server is the agent's own, agent/http/http_server.h). It makes a
// server session for each accepted connection, from the files as they are now: at most
// once a second, at an accept, it looks whether they were replaced and, if so, loads
// them into a new context. Replaced files that cannot be used (not PEM, a key of
// another certificate) leave the previous certificate in use, with a warning and
// `on_failed()` once per change (kspool_degraded_events_total{event=
// "metrics_tls_reload_failed"}).
// Thread safety: used only by the HTTP server's thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/security/tls_credentials.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace kspool::agent {

class HttpTls {
 public:
  using Clock = std::chrono::steady_clock;
  // Loads the files; errors name the flag.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpTls>> Load(
      TlsFiles files, std::function<void()> on_failed);
  ~HttpTls();
  HttpTls(const HttpTls&) = delete;
  HttpTls& operator=(const HttpTls&) = delete;

  // A server session on `fd` (non-blocking; the handshake happens in the first reads),
  // owned by the caller (SSL_free); null if OpenSSL cannot make one.
  SSL* NewSession(int fd, Clock::time_point now);

 private:
  HttpTls(TlsFiles files, std::function<void()> on_failed);
  // The files as an OpenSSL context, or an error naming the flag.
  absl::StatusOr<SSL_CTX*> MakeContext() const;
  void ReloadIfChanged(Clock::time_point now);

  TlsFiles files_;
  std::function<void()> on_failed_;
  SSL_CTX* ctx_ = nullptr;
  std::string fingerprint_;
  Clock::time_point checked_{};
};

}  // namespace kspool::agent
