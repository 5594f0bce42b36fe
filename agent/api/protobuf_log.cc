#include "agent/api/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include "base/log_rate_limiter.h"
#include "base/clock.h"

namespace kspool::agent {
namespace {

spdlog::level::level_enum SpdlogLevel(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_FATAL:
      return spdlog::level::critical;
    case google::protobuf::LOGLEVEL_ERROR:
      return spdlog::level::err;
    case google::protobuf::LOGLEVEL_WARNING:
      return spdlog::level::warn;
    default:
      return spdlog::level::info;
  }
}

void Handler(google::protobuf::LogLevel level, const char* filename, int line,
             const std::string& message) {
  static LogRateLimiter* limiter = new LogRateLimiter(10, 10'000);  // never destroyed
  uint64_t suppressed = 0;
  if (level != google::protobuf::LOGLEVEL_FATAL &&
      !limiter->Admit(SystemClock::Default()->MonotonicMillis(), &suppressed)) {
    return;
  }
  if (suppressed > 0) {
    spdlog::log(SpdlogLevel(level), "libprotobuf {}:{}: {} ({} more libprotobuf lines suppressed)",
                filename, line, message, suppressed);
  } else {
    spdlog::log(SpdlogLevel(level), "libprotobuf {}:{}: {}", filename, line, message);
  }
}

}  // namespace

void RouteProtobufLogsToSpdlog() { google::protobuf::SetLogHandler(&Handler); }

}  // namespace kspool::agent
