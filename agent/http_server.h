// HttpServer: the agent's HTTP endpoints on --metrics-listen (civetweb):
//   GET /metrics   Prometheus text format
//   GET /discards  the discard report as JSON
//   GET /status    version, agent id, uptime, WAL, Kafka and commit point as JSON
//   GET /healthz   200 "ok" while the WAL accepts writes, else 503 with the reason
// Thread safety: the handlers are called from civetweb's worker threads.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

class CivetServer;

namespace kspool::agent {

struct HttpHandlers {
  std::function<std::string()> metrics;
  std::function<std::string()> discards_json;
  std::function<std::string()> status_json;
  std::function<absl::Status()> health;
};

class HttpServer {
 public:
  // `listen` is HOST:PORT (port 0 picks a free one). UNAVAILABLE if it cannot bind.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen, HttpHandlers handlers);
  ~HttpServer();

  const std::string& address() const { return address_; }

 private:
  HttpServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

}  // namespace kspool::agent
