// Stub handlers for HttpServer tests, counting the connections the server drops by reason.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "agent/http/http_server.h"

namespace kspool::agent {

class HttpStub {
 public:
  // Handlers answering fixed bodies; /metrics answers `metrics`, /healthz `health`.
  HttpHandlers Handlers(std::string metrics = "kspool_up 1\n",
                        absl::Status health = absl::OkStatus()) {
    HttpHandlers h;
    h.metrics = [metrics] { return metrics; };
    h.discards_json = [] { return std::string("{\"discards\":[]}"); };
    h.status_json = [] { return std::string("{\"ok\":true}"); };
    h.health = [health] { return health; };
    h.on_drop = [s = state_](std::string_view reason) {
      std::lock_guard<std::mutex> l(s->mu);
      ++s->drops[std::string(reason)];
    };
    return h;
  }

  // Connections dropped for `reason` so far (the server reports from its own thread).
  int drops(const std::string& reason) const {
    std::lock_guard<std::mutex> l(state_->mu);
    auto it = state_->drops.find(reason);
    return it == state_->drops.end() ? 0 : it->second;
  }

 private:
  struct State {
    std::mutex mu;
    std::map<std::string, int> drops;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace kspool::agent
