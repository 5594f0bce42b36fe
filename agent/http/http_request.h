// The HTTP side of HttpServer without any I/O: finding and parsing a request head, routing
// it to the handlers and rendering the response bytes.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

#include "agent/http/http_server.h"

namespace kspool::agent {

// The length of the request head at the start of `buf` up to and including its blank line
// (CRLF CRLF, or a bare LF LF), or 0 while it is incomplete.
size_t HeadLength(std::string_view buf);

struct RequestLine {
  std::string_view method;
  std::string_view path;  // without the query
};

// The request line "METHOD /path HTTP/1.x" of a head; nullopt if it is malformed.
std::optional<RequestLine> ParseRequestLine(std::string_view head);

// A complete response, "Connection: close" and no body for HEAD requests.
std::string RenderResponse(int status, std::string_view content_type, std::string_view body,
                           bool head_only = false);

// The response to a complete request head from a peer (`loopback_peer`: its address is a
// loopback one): the endpoint's answer, or 400, 403, 404 or 405.
std::string Respond(const HttpHandlers& handlers, std::string_view head,
                    bool loopback_peer = true);

// True if `addr` is 127.0.0.0/8, ::1 or an IPv4-mapped 127.0.0.0/8 (a unix socket too).
bool IsLoopbackPeer(const sockaddr* addr);

}  // namespace kspool::agent
