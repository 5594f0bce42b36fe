// ConnectionKey and the meter's crediting by it, over real sockets: an IPv4 client of a
// dual-stack [::] listener (whose socket names it ::ffff:a.b.c.d while gRPC names it
// ipv4:a.b.c.d), an IPv6 client (gRPC escapes its brackets), and peer strings that
// name no TCP connection.
#include "agent/net/connection_key.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "agent/net/reception_meter.h"
#include "tests/support/wait.h"

namespace kspool::agent {
namespace {

using namespace std::chrono_literals;

TEST(ConnectionKey, GrpcsEscapedIpv6PeerNamesTheSameConnection) {
  EXPECT_EQ(ConnectionKeyOfPeer("ipv6:%5B::1%5D:5000"), ConnectionKeyOfPeer("ipv6:[::1]:5000"));
  EXPECT_EQ(ConnectionKeyOfPeer("ipv6:%5b::1%5d:5000"), ConnectionKeyOfPeer("ipv6:[::1]:5000"));
  ASSERT_TRUE(ConnectionKeyOfPeer("ipv4:127.0.0.1:5000").has_value());
  EXPECT_NE(ConnectionKeyOfPeer("ipv4:127.0.0.1:5000"), ConnectionKeyOfPeer("ipv6:[::1]:5000"));
  EXPECT_NE(ConnectionKeyOfPeer("ipv4:127.0.0.1:5000"), ConnectionKeyOfPeer("ipv4:127.0.0.1:5001"));
}

TEST(ConnectionKey, AnIpv4ClientMappedIntoIpv6IsTheSameConnection) {
  EXPECT_EQ(ConnectionKeyOfPeer("ipv6:[::ffff:10.1.2.3]:443"),
            ConnectionKeyOfPeer("ipv4:10.1.2.3:443"));
  EXPECT_EQ(ConnectionKeyOfPeer("ipv6:%5B::ffff:10.1.2.3%5D:443"),
            ConnectionKeyOfPeer("ipv4:10.1.2.3:443"));
  sockaddr_in6 mapped{};
  mapped.sin6_family = AF_INET6;
  mapped.sin6_port = htons(443);
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:10.1.2.3", &mapped.sin6_addr), 1);
  EXPECT_EQ(ConnectionKeyOfAddress(reinterpret_cast<sockaddr*>(&mapped), sizeof mapped),
            ConnectionKeyOfPeer("ipv4:10.1.2.3:443"));
}

TEST(ConnectionKey, AnIpv6ZoneIsIgnored) {
  EXPECT_EQ(ConnectionKeyOfPeer("ipv6:[fe80::1%25eth0]:7"), ConnectionKeyOfPeer("ipv6:[fe80::1]:7"));
  EXPECT_EQ(ConnectionKeyOfPeer("ipv6:%5Bfe80::1%25eth0%5D:7"), ConnectionKeyOfPeer("ipv6:[fe80::1]:7"));
}

TEST(ConnectionKey, PeersThatAreNotTcpHaveNone) {
  for (const char* peer : {"unix:/run/kspool.sock", "unix:", "", "ipv4:", "ipv4:1.2.3.4",
                           "ipv4:1.2.3.4:99999", "ipv4:host:5", "ipv6:[::1:5", "ipv6:%5::1%5D:5",
                           "ipv6:[::1]5"}) {
    EXPECT_FALSE(ConnectionKeyOfPeer(peer).has_value()) << peer;
  }
}

// A listening socket on `host` (an IPv6 literal), dual-stack; -1 without IPv6.
int Listen6(const char* host, sockaddr_in6* bound) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int zero = 0;
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  inet_pton(AF_INET6, host, &sa.sin6_addr);
  socklen_t len = sizeof sa;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    close(fd);
    return -1;
  }
  *bound = sa;
  return fd;
}

// Writes `n` bytes on `client`, reads them on `server` and sweeps until the meter's
// debt reaches `debt`.
bool SendAndSweep(int client, int server, size_t n, ReceptionMeter& meter, uint64_t debt) {
  std::string data(n, 'x');
  if (write(client, data.data(), n) != static_cast<ssize_t>(n)) return false;
  return testing::WaitUntil([&] {
    char buf[65536];
    while (recv(server, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    meter.Sweep();
    return meter.debt() >= debt;
  }, 5s);
}

// The defect behind "a healthy IPv4 client on --listen [::]:P is shut down": the
// meter named the socket ipv6:[::ffff:127.0.0.1]:P, gRPC named the call
// ipv4:127.0.0.1:P, and no completed request was ever credited.
TEST(ConnectionKey, AnIpv4ClientOfADualStackListenerIsCreditedByGrpcsPeerName) {
  sockaddr_in6 bound{};
  const int l = Listen6("::", &bound);
  if (l < 0) GTEST_SKIP() << "no IPv6 on this machine";
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = bound.sin6_port;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  const int server = accept(l, nullptr, nullptr);
  ASSERT_GE(server, 0);
  sockaddr_in me{};
  socklen_t len = sizeof me;
  getsockname(client, reinterpret_cast<sockaddr*>(&me), &len);

  ManualClock clock(0);
  ReceptionMeter meter(1 << 30, nullptr, &clock);
  meter.Track(server);
  ASSERT_EQ(meter.tracked(), 1u);
  ASSERT_TRUE(SendAndSweep(client, server, 100'000, meter, 100'000));
  meter.Completed("ipv4:127.0.0.1:" + std::to_string(ntohs(me.sin_port)), 100'000);
  meter.Sweep();
  EXPECT_EQ(meter.debt(), 0u);
  close(client);
  close(server);
  close(l);
}

TEST(ConnectionKey, AnIpv6ClientIsCreditedByGrpcsEscapedPeerName) {
  sockaddr_in6 bound{};
  const int l = Listen6("::1", &bound);
  if (l < 0) GTEST_SKIP() << "no IPv6 loopback on this machine";
  const int client = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&bound), sizeof bound), 0);
  const int server = accept(l, nullptr, nullptr);
  ASSERT_GE(server, 0);
  sockaddr_in6 me{};
  socklen_t len = sizeof me;
  getsockname(client, reinterpret_cast<sockaddr*>(&me), &len);

  ManualClock clock(0);
  ReceptionMeter meter(1 << 30, nullptr, &clock);
  meter.Track(server);
  ASSERT_TRUE(SendAndSweep(client, server, 100'000, meter, 100'000));
  meter.Completed("ipv6:%5B::1%5D:" + std::to_string(ntohs(me.sin6_port)), 100'000);
  meter.Sweep();
  EXPECT_EQ(meter.debt(), 0u);
  close(client);
  close(server);
  close(l);
}

}  // namespace
}  // namespace kspool::agent
