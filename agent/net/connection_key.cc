#include "agent/net/connection_key.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace kspool::agent {
namespace {

ConnectionKey MakeKey(const in6_addr& addr, uint16_t port_network_order) {
  ConnectionKey key(18, '\0');
  std::memcpy(key.data(), &addr, 16);
  std::memcpy(key.data() + 16, &port_network_order, 2);
  return key;
}

in6_addr MappedV4(const in_addr& v4) {
  in6_addr out{};
  out.s6_addr[10] = 0xff;
  out.s6_addr[11] = 0xff;
  std::memcpy(&out.s6_addr[12], &v4, 4);
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// gRPC escapes its peer URIs ("%5B", "%5D", "%25" for an IPv6 zone's '%').
std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<uint16_t> ParsePort(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  uint32_t port = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port > 65535) return std::nullopt;
  return htons(static_cast<uint16_t>(port));
}

}  // namespace

std::optional<ConnectionKey> ConnectionKeyOfPeer(std::string_view grpc_peer) {
  const bool v4 = grpc_peer.rfind("ipv4:", 0) == 0;
  const bool v6 = grpc_peer.rfind("ipv6:", 0) == 0;
  if (!v4 && !v6) return std::nullopt;
  const std::optional<std::string> rest = PercentDecode(grpc_peer.substr(5));
  if (!rest) return std::nullopt;
  std::string host;
  std::string_view port;
  if (!rest->empty() && (*rest)[0] == '[') {
    const size_t close = rest->find(']');
    if (close == std::string::npos || rest->compare(close + 1, 1, ":") != 0) return std::nullopt;
    host = rest->substr(1, close - 1);
    port = std::string_view(*rest).substr(close + 2);
  } else {
    const size_t colon = rest->rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    host = rest->substr(0, colon);
    port = std::string_view(*rest).substr(colon + 1);
  }
  if (const size_t zone = host.find('%'); zone != std::string::npos) host.resize(zone);
  const std::optional<uint16_t> p = ParsePort(port);
  if (!p) return std::nullopt;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return MakeKey(MappedV4(a4), *p);
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return MakeKey(a6, *p);
  return std::nullopt;
}

std::optional<ConnectionKey> ConnectionKeyOfAddress(const sockaddr* sa, socklen_t len) {
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return MakeKey(MappedV4(in->sin_addr), in->sin_port);
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return MakeKey(in6->sin6_addr, in6->sin6_port);
  }
  return std::nullopt;
}

std::optional<ConnectionKey> ConnectionKeyOfSocket(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return std::nullopt;
  return ConnectionKeyOfAddress(reinterpret_cast<const sockaddr*>(&sa), len);
}

}  // namespace kspool::agent
