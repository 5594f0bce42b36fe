// HttpServer's contract on a real loopback socket: addresses and exclusive ports, routing,
// response headers, and shutdown with clients connected.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/http/http_request.h"
#include "agent/http/http_server.h"
#include "tests/agent/http/http_stub.h"
#include "tests/support/http_get.h"
#include "tests/support/tcp_client.h"

namespace kspool::agent {
namespace {

using kspool::testing::Exchange;
using kspool::testing::HttpGet;
using kspool::testing::HttpResponse;
using kspool::testing::ParseHttpResponse;
using kspool::testing::TcpClient;
using namespace std::chrono_literals;

HttpResponse Request(const std::string& address, const std::string& request) {
  return ParseHttpResponse(Exchange(address, request, 2s));
}

TEST(HttpServerApi, EndpointsAnswerWithTheirTypesLengthAndNoStore) {
  HttpStub stub;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers("kspool_up 1\n"));
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  HttpResponse metrics = HttpGet(address, "/metrics?x=1");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.content_type, "text/plain; version=0.0.4");
  EXPECT_EQ(metrics.body, "kspool_up 1\n");
  EXPECT_NE(metrics.head.find("Content-Length: 12\r\n"), std::string::npos);
  EXPECT_NE(metrics.head.find("Cache-Control: no-store\r\n"), std::string::npos);
  EXPECT_EQ(HttpGet(address, "/status").content_type, "application/json");
  EXPECT_EQ(HttpGet(address, "/discards").body, "{\"discards\":[]}");
  EXPECT_EQ(HttpGet(address, "/healthz").body, "ok\n");
  HttpResponse head = Request(address, "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_NE(head.head.find("Content-Length: 12\r\n"), std::string::npos);
  EXPECT_EQ(head.body, "");
}

TEST(HttpServerApi, HealthzIs503WithTheReasonWhileUnhealthy) {
  HttpStub stub;
  auto server = HttpServer::Start("127.0.0.1:0",
                                  stub.Handlers("", absl::UnavailableError("wal: disk full")));
  ASSERT_TRUE(server.ok()) << server.status();
  HttpResponse r = HttpGet((*server)->address(), "/healthz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "UNAVAILABLE: wal: disk full\n");
}

TEST(HttpServerApi, UnknownPathIs404OtherMethods405AndAMalformedRequestLine400) {
  HttpStub stub;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  EXPECT_EQ(HttpGet(address, "/nope").status, 404);
  EXPECT_EQ(HttpGet(address, "/metricsX").status, 404);
  HttpResponse post = Request(address, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(post.status, 405);
  EXPECT_NE(post.head.find("Allow: GET, HEAD\r\n"), std::string::npos);
  for (const char* bad : {"GET\r\n\r\n", "GET /healthz\r\n\r\n", "GET healthz HTTP/1.1\r\n\r\n",
                          "GET /healthz HTTP/2.0\r\n\r\n", "get /healthz HTTP/1.1\r\n\r\n",
                          "\x16\x03\x01 garbage\r\n\r\n"}) {
    EXPECT_EQ(Request(address, bad).status, 400) << bad;
  }
  EXPECT_EQ(Request(address, "GET /healthz HTTP/1.0\n\n").status, 200) << "bare LF";
}

bool Loopback(const char* text) {
  sockaddr_storage a{};
  if (inet_pton(AF_INET, text, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr) == 1) {
    a.ss_family = AF_INET;
  } else {
    EXPECT_EQ(inet_pton(AF_INET6, text, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr), 1);
    a.ss_family = AF_INET6;
  }
  return IsLoopbackPeer(reinterpret_cast<const sockaddr*>(&a));
}

TEST(HttpServerApi, LoopbackPeersAreThoseOf127Slash8AndColonColon1) {
  for (const char* yes : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(Loopback(yes)) << yes;
  }
  for (const char* no : {"10.0.0.1", "192.0.2.2", "0.0.0.0", "fd00::2", "::ffff:10.0.0.1", "::"}) {
    EXPECT_FALSE(Loopback(no)) << no;
  }
}

TEST(HttpServerApi, DetailEndpointsAre403ToAPeerBeyondLoopbackWhenRestricted) {
  HttpStub stub;
  HttpHandlers h = stub.Handlers();
  h.detail_loopback_only = true;
  for (const char* path : {"/status", "/discards"}) {
    const std::string get = std::string("GET ") + path + " HTTP/1.1\r\n\r\n";
    HttpResponse refused = ParseHttpResponse(Respond(h, get, /*loopback_peer=*/false));
    EXPECT_EQ(refused.status, 403) << path;
    EXPECT_EQ(refused.body.find('{'), std::string::npos) << refused.body;
    EXPECT_EQ(ParseHttpResponse(Respond(h, get, true)).status, 200) << path;
    EXPECT_EQ(ParseHttpResponse(Respond(stub.Handlers(), get, false)).status, 200)
        << path << ": unrestricted";
  }
  EXPECT_EQ(ParseHttpResponse(Respond(h, "GET /metrics HTTP/1.1\r\n\r\n", false)).status, 200);
  EXPECT_EQ(ParseHttpResponse(Respond(h, "GET /healthz HTTP/1.1\r\n\r\n", false)).status, 200);
  // Over a real connection from 127.0.0.1: served.
  auto server = HttpServer::Start("127.0.0.1:0", h);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(HttpGet((*server)->address(), "/status").status, 200);
}

TEST(HttpServerApi, SecondServerOnTheSamePortIsUnavailableNamingIt) {
  HttpStub stub;
  auto first = HttpServer::Start("127.0.0.1:0", stub.Handlers());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = HttpServer::Start((*first)->address(), stub.Handlers());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find((*first)->address()), std::string::npos);
  EXPECT_EQ(HttpServer::Start("9411", stub.Handlers()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HttpServerApi, ListensOnIpv6LoopbackWithPortZero) {
  int probe = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 loop{};
  loop.sin6_family = AF_INET6;
  loop.sin6_addr = in6addr_loopback;
  const bool has_v6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&loop), sizeof(loop)) == 0;
  if (probe >= 0) close(probe);
  if (!has_v6) GTEST_SKIP() << "no IPv6 loopback here";
  HttpStub stub;
  auto server = HttpServer::Start("[::1]:0", stub.Handlers());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->address().rfind("[::1]:", 0), 0u) << (*server)->address();
  EXPECT_NE((*server)->address(), "[::1]:0");
  EXPECT_EQ(HttpGet((*server)->address(), "/healthz").status, 200);
}

TEST(HttpServerApi, ShutdownWithClientsConnectedIsPromptClosesThemAndFreesThePort) {
  HttpStub stub;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers(std::string(16 << 20, 'm')));
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  TcpClient idle(address);
  TcpClient partial(address);
  TcpClient stuck(address, /*receive_buffer=*/4096);
  ASSERT_TRUE(partial.Send("GET /heal"));
  ASSERT_TRUE(stuck.Send("GET /metrics HTTP/1.1\r\n\r\n"));
  ASSERT_EQ(HttpGet(address, "/healthz").status, 200);  // all three are accepted by now
  const auto start = std::chrono::steady_clock::now();
  server->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_TRUE(idle.ReadUntilClosed(2s));
  EXPECT_TRUE(partial.ReadUntilClosed(2s));
  EXPECT_TRUE(stuck.ReadUntilClosed(5s));
  auto again = HttpServer::Start(address, stub.Handlers());
  EXPECT_TRUE(again.ok()) << again.status();
}

}  // namespace
}  // namespace kspool::agent
