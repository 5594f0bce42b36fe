#include "tests/support/http_get.h"

#include "tests/support/tcp_client.h"

namespace kspool::testing {

HttpResponse ParseHttpResponse(const std::string& raw) {
  HttpResponse r;
  size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  r.head = raw.substr(0, head_end);
  size_t ct = r.head.find("Content-Type: ");
  if (ct != std::string::npos) {
    r.content_type = r.head.substr(ct + 14, r.head.find("\r\n", ct) - ct - 14);
  }
  r.body = raw.substr(head_end + 4);
  return r;
}

HttpResponse HttpGet(const std::string& address, const std::string& path,
                     std::chrono::milliseconds timeout) {
  return ParseHttpResponse(Exchange(
      address,
      "GET " + path + " HTTP/1.1\r\nHost: " + address + "\r\nConnection: close\r\n\r\n",
      timeout));
}

std::map<std::string, double> ScrapeMetrics(const std::string& address) {
  HttpResponse r = HttpGet(address, "/metrics");
  std::map<std::string, double> out;
  if (r.status != 200 || r.content_type.find("text/plain") == std::string::npos) return out;
  size_t pos = 0;
  while (pos < r.body.size()) {
    size_t nl = r.body.find('\n', pos);
    std::string line = r.body.substr(pos, nl - pos);
    pos = nl == std::string::npos ? r.body.size() : nl + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

}  // namespace kspool::testing
