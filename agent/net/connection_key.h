// ConnectionKey: one name for a TCP client connection, whether it is read from the
// descriptor the listener accepted (getpeername) or from the peer string gRPC gives a
// call on that connection (ServerContext::peer()). gRPC 1.51 tells a call neither its
// descriptor nor its local address, so the peer's address and port are what the two
// sides share. Both are reduced to the same 18 bytes: the address as IPv6 (an IPv4
// address, and an IPv4 client of a dual-stack socket, "::ffff:a.b.c.d", as that mapped
// form) and the port. "ipv4:127.0.0.1:5000", "ipv6:[::ffff:127.0.0.1]:5000" and a
// socket whose peer is 127.0.0.1:5000 name one connection; "ipv6:%5B::1%5D:5000" (gRPC
// escapes brackets) and "ipv6:[::1]:5000" another; an IPv6 zone ("%eth0") is dropped.
// Unix sockets, and anything else, have no key (nullopt).
// Thread safety: stateless functions.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

namespace kspool::agent {

// 16 bytes of IPv6 address followed by 2 bytes of port (network order).
using ConnectionKey = std::string;

// The key of a gRPC peer string ("ipv4:HOST:PORT", "ipv6:[HOST]:PORT", URI-escaped or not).
std::optional<ConnectionKey> ConnectionKeyOfPeer(std::string_view grpc_peer);
// The key of a socket address (AF_INET or AF_INET6).
std::optional<ConnectionKey> ConnectionKeyOfAddress(const sockaddr* sa, socklen_t len);
// The key of a connected socket's peer.
std::optional<ConnectionKey> ConnectionKeyOfSocket(int fd);

}  // namespace kspool::agent
