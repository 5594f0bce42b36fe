// HttpGet: a minimal HTTP/1.1 client for tests (GET over a loopback TCP socket).
#pragma once

#include <map>
#include <string>

namespace kspool::testing {

struct HttpResponse {
  int status = 0;  // 0: no connection or no valid response
  std::string content_type;
  std::string body;
};

// `address` is HOST:PORT.
HttpResponse HttpGet(const std::string& address, const std::string& path);

// GET /metrics: the "name{labels} value" lines of the Prometheus text format, keyed by
// "name{labels}"; empty unless the status is 200 and the type text/plain.
std::map<std::string, double> ScrapeMetrics(const std::string& address);

}  // namespace kspool::testing
