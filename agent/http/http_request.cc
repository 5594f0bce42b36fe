#include "agent/http/http_request.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace kspool::agent {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < 'A' || c > 'Z') return false;
  }
  return true;
}

}  // namespace

size_t HeadLength(std::string_view buf) {
  const size_t crlf = buf.find("\r\n\r\n");
  const size_t lf = buf.find("\n\n");
  const size_t crlf_end = crlf == std::string_view::npos ? buf.size() + 1 : crlf + 4;
  const size_t lf_end = lf == std::string_view::npos ? buf.size() + 1 : lf + 2;
  const size_t end = std::min(crlf_end, lf_end);
  return end > buf.size() ? 0 : end;
}

std::optional<RequestLine> ParseRequestLine(std::string_view head) {
  while (head.substr(0, 2) == "\r\n") head.remove_prefix(2);  // RFC 9112 2.2: ignore them
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return std::nullopt;
  RequestLine r{line.substr(0, sp1), line.substr(sp1 + 1, sp2 - sp1 - 1)};
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(r.method) || r.path.empty() || r.path[0] != '/' ||
      r.path.find(' ') != std::string_view::npos ||
      (version != "HTTP/1.1" && version != "HTTP/1.0")) {
    return std::nullopt;
  }
  r.path = r.path.substr(0, r.path.find('?'));
  return r;
}

std::string RenderResponse(int status, std::string_view content_type, std::string_view body,
                           bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
                    "\r\nContent-Type: " + std::string(content_type) +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nCache-Control: no-store\r\n" +
                    (status == 405 ? "Allow: GET, HEAD\r\n" : "") + "Connection: close\r\n\r\n";
  if (!head_only) out.append(body);
  return out;
}

bool IsLoopbackPeer(const sockaddr* addr) {
  if (addr == nullptr) return false;
  switch (addr->sa_family) {
    case AF_UNIX:
      return true;
    case AF_INET:
      return (ntohl(reinterpret_cast<const sockaddr_in*>(addr)->sin_addr.s_addr) >> 24) == 127;
    case AF_INET6: {
      const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr;
      if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
      return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
    }
    default:
      return false;
  }
}

std::string Respond(const HttpHandlers& h, std::string_view head, bool loopback_peer) {
  std::optional<RequestLine> req = ParseRequestLine(head);
  if (!req) return RenderResponse(400, "text/plain", "malformed request line\n");
  const std::function<std::string()>* body = nullptr;
  const char* type = "application/json";
  if (req->path == "/metrics") {
    body = &h.metrics;
    type = "text/plain; version=0.0.4";
  } else if (req->path == "/discards") {
    body = &h.discards_json;
  } else if (req->path == "/status") {
    body = &h.status_json;
  } else if (req->path != "/healthz" || !h.health) {
    return RenderResponse(404, "text/plain", "not found\n");
  }
  if (body && !*body) return RenderResponse(404, "text/plain", "not found\n");
  const bool head_only = req->method == "HEAD";
  if (req->method != "GET" && !head_only) {
    return RenderResponse(405, "text/plain", "only GET and HEAD\n");
  }
  if (body && body != &h.metrics && h.detail_loopback_only && !loopback_peer) {
    return RenderResponse(403, "text/plain",
                          std::string(req->path) +
                              " is served to loopback peers only (--acl, --http-detail-from)\n",
                          head_only);
  }
  if (body) return RenderResponse(200, type, (*body)(), head_only);
  absl::Status s = h.health();
  return RenderResponse(s.ok() ? 200 : 503, "text/plain", s.ok() ? "ok\n" : s.ToString() + "\n",
                        head_only);
}

}  // namespace kspool::agent
