// ReceptionMeter over real loopback TCP connections: debts follow the bytes the kernel
// received minus the requests completed, and the largest holders are shut down.
#include "agent/net/reception_meter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/support/wait.h"

namespace kspool::agent {
namespace {

using namespace std::chrono_literals;

// A connected loopback pair: `client` writes, `server` is what gRPC would hold.
struct Pair {
  int client = -1, server = -1;
  std::string peer;  // the client as gRPC names it
  ~Pair() {
    close(client);
    close(server);
  }
};

class ReceptionMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ASSERT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof sa;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    addr_ = sa;
  }
  void TearDown() override { close(listen_fd_); }

  std::unique_ptr<Pair> Connect() {
    auto p = std::make_unique<Pair>();
    p->client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(p->client, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_), 0);
    p->server = accept(listen_fd_, nullptr, nullptr);
    sockaddr_in me{};
    socklen_t len = sizeof me;
    getsockname(p->client, reinterpret_cast<sockaddr*>(&me), &len);
    p->peer = "ipv4:127.0.0.1:" + std::to_string(ntohs(me.sin_port));
    return p;
  }
  // Sends `n` bytes and sweeps until `done` (by default: the debt reaches `expect_debt`).
  void Send(Pair& p, size_t n, ReceptionMeter& meter, uint64_t expect_debt,
            std::function<bool()> done = nullptr) {
    std::string data(n, 'x');
    ASSERT_EQ(write(p.client, data.data(), n), static_cast<ssize_t>(n));
    ASSERT_TRUE(testing::WaitUntil([&] {
      // Read what arrived, as gRPC does, so the kernel keeps receiving.
      char buf[65536];
      while (recv(p.server, buf, sizeof buf, MSG_DONTWAIT) > 0) {
      }
      meter.Sweep();
      return done ? done() : meter.debt() >= expect_debt;
    }, 5s));
  }
  int listen_fd_ = -1;
  sockaddr_in addr_{};
  // Stopped: no time-based forgiveness, so debts are exact.
  ManualClock clock_{0};
};

TEST_F(ReceptionMeterTest, BytesReceivedWithoutACompletedRequestAreDebt) {
  ReceptionMeter meter(1 << 30, nullptr, &clock_);
  auto p = Connect();
  meter.Track(p->server);
  Send(*p, 100'000, meter, 100'000);
  EXPECT_EQ(meter.debt(), 100'000u);
}

TEST_F(ReceptionMeterTest, CompletedRequestsPayTheDebtButBankNoCredit) {
  ReceptionMeter meter(1 << 30, nullptr, &clock_);
  auto p = Connect();
  meter.Track(p->server);
  Send(*p, 100'000, meter, 100'000);
  meter.Completed(p->peer, 100'000);
  meter.Sweep();
  EXPECT_EQ(meter.debt(), 0u);
  // A surplus (framing is credited generously) is not kept for later.
  meter.Completed(p->peer, 1'000'000);
  meter.Sweep();
  Send(*p, 50'000, meter, 50'000);
  EXPECT_EQ(meter.debt(), 50'000u);
}

TEST_F(ReceptionMeterTest, OverTheLimitTheLargestHoldersAreShutDown) {
  std::vector<uint64_t> shut;
  ReceptionMeter meter(1'000'000, [&](uint64_t debt) { shut.push_back(debt); }, &clock_);
  auto small = Connect(), large = Connect(), paying = Connect();
  for (auto* p : {small.get(), large.get(), paying.get()}) meter.Track(p->server);
  Send(*small, 200'000, meter, 200'000);
  Send(*paying, 600'000, meter, 800'000);
  meter.Completed(paying->peer, 600'000);  // completed its requests: owes nothing
  Send(*large, 900'000, meter, 0, [&] { return !shut.empty(); });
  ASSERT_EQ(shut.size(), 1u);
  EXPECT_EQ(shut[0], 900'000u);
  EXPECT_EQ(meter.debt(), 200'000u);
  // The large client's connection is shut down; the others are untouched.
  char c;
  EXPECT_EQ(read(large->client, &c, 1), 0);
  EXPECT_EQ(write(paying->client, "x", 1), 1);
}

TEST_F(ReceptionMeterTest, AnUntrackedConnectionOwesNothing) {
  ReceptionMeter meter(1 << 30, nullptr, &clock_);
  auto p = Connect();
  meter.Track(p->server);
  Send(*p, 10'000, meter, 10'000);
  meter.Untrack(p->server);
  meter.Sweep();
  EXPECT_EQ(meter.debt(), 0u);
}

TEST_F(ReceptionMeterTest, AUnixSocketIsNotMetered) {
  ReceptionMeter meter(1 << 30, nullptr, &clock_);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  meter.Track(sv[1]);
  EXPECT_EQ(meter.tracked(), 0u);
  ASSERT_EQ(write(sv[0], "xxxx", 4), 4);
  meter.Sweep();
  EXPECT_EQ(meter.debt(), 0u);
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
}  // namespace kspool::agent
