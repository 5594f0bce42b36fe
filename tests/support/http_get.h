// HttpGet: a minimal HTTP/1.1 client for tests (GET over a loopback TCP socket).
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace kspool::testing {

struct HttpResponse {
  int status = 0;  // 0: no connection or no valid response
  std::string content_type;
  std::string head;  // the status line and headers
  std::string body;
};

// Parses a raw HTTP response (status 0 if it is not one).
HttpResponse ParseHttpResponse(const std::string& raw);

// `address` is HOST:PORT. Status 0 if no complete response came within `timeout`.
HttpResponse HttpGet(const std::string& address, const std::string& path,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

// GET /metrics: the "name{labels} value" lines of the Prometheus text format, keyed by
// "name{labels}"; empty unless the status is 200 and the type text/plain.
std::map<std::string, double> ScrapeMetrics(const std::string& address);

}  // namespace kspool::testing
