// HttpDropLog: the warning lines for connections HttpServer closes to keep serving, at most
// one line per 5 s with the counts by reason since the last line (a flood of idle or slow
// clients must not flood the log too). Used only by the server's thread.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <string>

#include "agent/http/http_server.h"

namespace kspool::agent {

class HttpDropLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kEvery{5};

  void SetLimits(const HttpLimits& l) { limits_ = l; }

  void Count(const char* reason, Clock::time_point now) {
    ++pending_[reason];
    Flush(now);
  }

  // Logs the counts not yet logged if the last line is at least kEvery old, or if `force`
  // (at shutdown).
  void Flush(Clock::time_point now, bool force = false) {
    if (pending_.empty() || (!force && logged_ && now - last_ < kEvery)) return;
    std::string counts;
    uint64_t total = 0;
    for (const auto& [reason, n] : pending_) {
      counts += (counts.empty() ? "" : ", ") + reason + "=" + std::to_string(n);
      total += n;
    }
    spdlog::warn("http: closed {} connection(s) to keep serving ({}); limits: request head "
                 "within {} ms and {} bytes, response read within {} ms, {} connections",
                 total, counts, limits_.head_timeout.count(), limits_.max_head_bytes,
                 limits_.write_timeout.count(), limits_.max_connections);
    pending_.clear();
    logged_ = true;
    last_ = now;
  }

 private:
  HttpLimits limits_;
  std::map<std::string, uint64_t> pending_;
  bool logged_ = false;
  Clock::time_point last_{};
};

}  // namespace kspool::agent
