#include "tests/support/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kspool::testing {

HttpResponse HttpGet(const std::string& address, const std::string& path) {
  HttpResponse r;
  size_t colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return r;
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + address + "\r\nConnection: close\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string raw;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::stoi(raw.substr(9, 3));
  std::string head = raw.substr(0, head_end);
  size_t ct = head.find("Content-Type: ");
  if (ct != std::string::npos) r.content_type = head.substr(ct + 14, head.find("\r\n", ct) - ct - 14);
  r.body = raw.substr(head_end + 4);
  return r;
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
