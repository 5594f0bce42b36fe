// HttpServer on a real loopback socket with stub handlers, against idle, dribbling
// (slowloris), oversized and never-reading clients.
#include "agent/http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/agent/http/http_stub.h"
#include "tests/support/http_get.h"
#include "tests/support/tcp_client.h"
#include "tests/support/wait.h"

namespace kspool::agent {
namespace {

using kspool::testing::Exchange;
using kspool::testing::HttpGet;
using kspool::testing::ParseHttpResponse;
using kspool::testing::TcpClient;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using namespace std::chrono_literals;

// Slowloris: connections that send a request head one byte every `every`, never finishing it.
class Slowloris {
 public:
  Slowloris(const std::string& address, int n, milliseconds every) {
    for (int i = 0; i < n; ++i) clients_.push_back(std::make_unique<TcpClient>(address));
    thread_ = std::thread([this, every] {
      const std::string head = "GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
      std::unique_lock<std::mutex> l(mu_);
      for (size_t i = 0; !stop_; i = (i + 1) % head.size()) {
        for (auto& c : clients_) c->Send(head.substr(i, 1));
        cv_.wait_for(l, every, [this] { return stop_; });  // the attack's pace
      }
    });
  }
  ~Slowloris() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  TcpClient& client(size_t i) { return *clients_[i]; }

 private:
  std::vector<std::unique_ptr<TcpClient>> clients_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Polls `cond` until it holds or `timeout` passes.
template <typename Cond>
bool Eventually(Cond cond, milliseconds timeout = 3s) {
  return kspool::testing::WaitUntil(cond, timeout, 10ms);
}

milliseconds Since(steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
}

TEST(HttpServer, HealthzAnswersWithin1sWhile64IdleSocketsAndSlowlorisAreOpen) {
  HttpStub stub;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  std::vector<std::unique_ptr<TcpClient>> idle;
  for (int i = 0; i < 64; ++i) {
    idle.push_back(std::make_unique<TcpClient>(address));
    ASSERT_TRUE(idle.back()->connected());
  }
  Slowloris slow(address, 8, 200ms);
  int probes = 0;
  for (const auto end = steady_clock::now() + 3s; steady_clock::now() < end; ++probes) {
    const auto start = steady_clock::now();
    auto r = HttpGet(address, "/healthz", 2s);
    const milliseconds took = Since(start);
    ASSERT_EQ(r.status, 200) << "probe " << probes << " after " << took.count() << " ms";
    ASSERT_LT(took, 1s) << "probe " << probes;
  }
  EXPECT_GE(probes, 10);
  EXPECT_FALSE(idle.front()->PeerClosed()) << "the attack lasted the whole test";
  EXPECT_FALSE(slow.client(0).PeerClosed());
  EXPECT_EQ(stub.drops("head_timeout") + stub.drops("evicted"), 0);
}

TEST(HttpServer, HeadDeadlineClosesIdleAndDribblingConnectionsFromAccept) {
  HttpStub stub;
  HttpLimits limits;
  limits.head_timeout = 400ms;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers(), limits);
  ASSERT_TRUE(server.ok()) << server.status();
  const auto start = steady_clock::now();
  TcpClient idle((*server)->address());
  TcpClient dribbler((*server)->address());
  const std::string head = "GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  bool closed = false;
  // A byte every 50 ms: each one is progress, yet the deadline counts from the accept.
  for (size_t i = 0; !closed && i < head.size(); ++i) {
    dribbler.Send(head.substr(i, 1));
    closed = dribbler.ReadUntilClosed(50ms);
  }
  const milliseconds took = Since(start);
  EXPECT_TRUE(closed) << "still open after " << took.count() << " ms";
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 1400ms);
  EXPECT_TRUE(idle.ReadUntilClosed(1s));
  EXPECT_TRUE(Eventually([&] { return stub.drops("head_timeout") == 2; }));
}

TEST(HttpServer, RequestHeadOverTheCapIsAnswered431AndClosed) {
  HttpStub stub;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  const std::string big = "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(9000, 'a');
  auto r = ParseHttpResponse(Exchange(address, big, 2s));  // no end of head: the cap decides
  EXPECT_EQ(r.status, 431);
  EXPECT_TRUE(Eventually([&] { return stub.drops("head_too_large") == 1; }));
  // A head just under the cap is served.
  const std::string fits = "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(8000, 'a') + "\r\n\r\n";
  EXPECT_EQ(ParseHttpResponse(Exchange(address, fits, 2s)).status, 200);
}

TEST(HttpServer, FullServerClosesTheLongestWaitingConnectionSoANewProbeIsServed) {
  HttpStub stub;
  HttpLimits limits;
  limits.max_connections = 4;
  auto server = HttpServer::Start("127.0.0.1:0", stub.Handlers(), limits);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::unique_ptr<TcpClient>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<TcpClient>((*server)->address()));
  EXPECT_EQ(HttpGet((*server)->address(), "/healthz", 2s).status, 200);
  EXPECT_TRUE(idle[0]->ReadUntilClosed(2s)) << "the oldest was closed to make room";
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(idle[i]->PeerClosed()) << i;
  EXPECT_TRUE(Eventually([&] { return stub.drops("evicted") == 1; }));
}

TEST(HttpServer, ClientThatNeverReadsALargeBodyBlocksNoOneAndIsDroppedAtTheWriteDeadline) {
  HttpStub stub;
  HttpLimits limits;
  limits.write_timeout = 2s;
  auto server =
      HttpServer::Start("127.0.0.1:0", stub.Handlers(std::string(16 << 20, 'm')), limits);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  TcpClient stuck(address, /*receive_buffer=*/4096);
  ASSERT_TRUE(stuck.Send("GET /metrics HTTP/1.1\r\n\r\n"));
  const auto start = steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    const auto probe = steady_clock::now();
    EXPECT_EQ(HttpGet(address, "/healthz", 2s).status, 200);
    EXPECT_LT(Since(probe), 1s);
  }
  EXPECT_LT(Since(start), 1s);
  EXPECT_EQ(stub.drops("write_timeout"), 0) << "its deadline is not over yet";
  EXPECT_TRUE(Eventually([&] { return stub.drops("write_timeout") == 1; }));
  std::string got;
  EXPECT_TRUE(stuck.ReadUntilClosed(3s, &got));
  EXPECT_LT(got.size(), size_t{16} << 20);
}

}  // namespace
}  // namespace kspool::agent
