#include "agent/http_server.h"

#include <CivetServer.h>

#include <vector>

namespace kspool::agent {
namespace {

void Reply(mg_connection* conn, int code, const char* type, const std::string& body) {
  const char* reason = code == 200 ? "OK" : code == 503 ? "Service Unavailable" : "Error";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            code, reason, type, body.size());
  mg_write(conn, body.data(), body.size());
}

class Handler : public CivetHandler {
 public:
  Handler(std::function<std::string()> body, const char* type) : body_(std::move(body)), type_(type) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    Reply(conn, 200, type_, body_());
    return true;
  }

 private:
  std::function<std::string()> body_;
  const char* type_;
};

class HealthHandler : public CivetHandler {
 public:
  explicit HealthHandler(std::function<absl::Status()> health) : health_(std::move(health)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    absl::Status s = health_();
    Reply(conn, s.ok() ? 200 : 503, "text/plain", s.ok() ? "ok\n" : s.ToString() + "\n");
    return true;
  }

 private:
  std::function<absl::Status()> health_;
};

}  // namespace

struct HttpServer::Impl {
  std::unique_ptr<CivetServer> server;
  std::vector<std::unique_ptr<CivetHandler>> handlers;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                              HttpHandlers h) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError("--metrics-listen '" + listen + "' is not HOST:PORT");
  }
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->impl_ = std::make_unique<Impl>();
  std::vector<std::string> options = {"listening_ports", listen, "num_threads", "4"};
  try {
    s->impl_->server = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    return absl::UnavailableError("cannot serve HTTP on " + listen + ": " + e.what());
  }
  auto add = [&](const char* path, CivetHandler* handler) {
    s->impl_->handlers.emplace_back(handler);
    s->impl_->server->addHandler(path, handler);
  };
  add("/metrics", new Handler(h.metrics, "text/plain; version=0.0.4"));
  add("/discards", new Handler(h.discards_json, "application/json"));
  add("/status", new Handler(h.status_json, "application/json"));
  add("/healthz", new HealthHandler(h.health));
  std::vector<int> ports = s->impl_->server->getListeningPorts();
  s->address_ = listen.substr(0, colon) + ":" + (ports.empty() ? "0" : std::to_string(ports[0]));
  return s;
}

HttpServer::~HttpServer() {
  if (impl_ && impl_->server) impl_->server->close();
}

}  // namespace kspool::agent
