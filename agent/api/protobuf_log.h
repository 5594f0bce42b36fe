// libprotobuf's log lines (e.g. about a message it cannot parse) go through spdlog,
// rate-limited (base/log_rate_limiter.h): a client can make protobuf log once per
// request. At most 10 lines per 10 s; a fatal line (protobuf aborts after it) always.
#pragma once

namespace kspool::agent {

// Installs the handler (google::protobuf::SetLogHandler). Call once at start, before
// other threads use protobuf: SetLogHandler itself is not thread-safe. The handler may
// then be called from any thread.
void RouteProtobufLogsToSpdlog();

}  // namespace kspool::agent
