// The front door under hostile and careless clients, end to end: a real agent process
// and kspool-devkafka over loopback. Idle sockets, a second agent on the same port,
// connections beyond the limit, stalled large requests.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/h2_stall_client.h"
#include "tests/support/http_get.h"
#include "tests/support/process_memory.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using namespace std::chrono_literals;
using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::WaitUntil;

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// A plain TCP connection to 127.0.0.1:port that sends nothing; -1 if refused.
int IdleConnection(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True once the peer has closed or reset `fd` within `timeout` (what it sends before,
// such as gRPC's HTTP/2 settings, is read and ignored).
bool ClosedByPeer(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

kspool::v1::SendRequest OneMessage(const std::string& topic, const std::string& value) {
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic(topic);
  m->set_value(value);
  return req;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The agent's RSS in MB (whole: what the bounds below are stated in).
int64_t RssMb(pid_t pid) { return kspool::testing::RssBytes(pid) / kspool::testing::kMiB; }

class FrontDoor : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 1, std::vector<std::string>{"demo:2"});
  }
  std::unique_ptr<AgentProcess> StartAgent(const std::string& name, std::vector<std::string> args = {},
                                           std::vector<std::string> launcher = {}) {
    return std::make_unique<AgentProcess>(dir_.path() + "/" + name, dir_.path() + "/" + name + ".log",
                                          kafka_->bootstrap(), std::move(args),
                                          std::vector<std::string>{}, std::move(launcher));
  }
  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
};

TEST_F(FrontDoor, SecondAgentOnTheSamePortFailsNamingIt) {
  auto first = StartAgent("first");
  kspool::testing::ChildProcess second(
      {KSPOOL_AGENT_BIN, "--wal-dir", dir_.path() + "/second", "--listen", first->address(),
       "--metrics-listen", "127.0.0.1:0", "--kafka-brokers", kafka_->bootstrap()},
      dir_.path() + "/second.log");
  std::optional<int> status = second.Wait(30s);
  ASSERT_TRUE(status.has_value()) << "the second agent kept running on a used port";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1);
  const std::string log = ReadFile(dir_.path() + "/second.log");
  EXPECT_NE(log.find("cannot listen on " + first->address()), std::string::npos) << log;
  EXPECT_NE(log.find("Address already in use"), std::string::npos) << log;
  // Every client still reaches the first agent.
  for (int i = 0; i < 20; ++i) {
    auto channel = grpc::CreateChannel(first->address(), grpc::InsecureChannelCredentials());
    kspool::v1::SendResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    ASSERT_TRUE(kspool::v1::Spool::NewStub(channel)->Send(&ctx, OneMessage("demo", "m"), &resp).ok());
  }
  EXPECT_EQ(first->WalStats().appended_messages(), 20u);
}

TEST_F(FrontDoor, IdleConnectionsUnderALowFileLimitCannotStopSendsOnAnExistingChannel) {
  // The test itself needs more than 1,100 descriptors.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  ASSERT_GE(rl.rlim_cur, 1300u) << "the test process needs a hard open-files limit of 1300";
  // Soft and hard limit 1024 for the agent: it cannot raise them, so the connection cap
  // must keep clients off the WAL's descriptors.
  auto agent = StartAgent("agent", {}, {"/usr/bin/prlimit", "--nofile=1024:1024"});
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent->Send(OneMessage("demo", "before"), &resp).ok());

  std::vector<int> idle;
  for (int i = 0; i < 1100; ++i) {
    const int fd = IdleConnection(PortOf(agent->address()));
    if (fd >= 0) idle.push_back(fd);
  }
  int ok = 0;
  for (int i = 0; i < 120; ++i) {
    grpc::Status s = agent->Send(OneMessage("demo", "m" + std::to_string(i)), &resp);
    ok += s.ok();
    EXPECT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  EXPECT_EQ(ok, 120);
  // 48 MB more: the WAL's memtable (32 MiB) is flushed, so RocksDB opens new files
  // while the idle sockets are open.
  kspool::v1::SendRequest big;
  for (int i = 0; i < 10; ++i) {
    auto* m = big.add_messages();
    m->set_topic("demo");
    m->set_value(std::string(100'000, 'b'));
  }
  for (int i = 0; i < 48; ++i) {
    grpc::Status s = agent->Send(big, &resp);
    EXPECT_TRUE(s.ok()) << "large " << i << ": " << s.error_message();
  }
  EXPECT_TRUE(agent->WaitUntilDrained(30s)) << "the WAL did not settle";
  EXPECT_EQ(kspool::testing::HttpGet(agent->http_address(), "/healthz").status, 200);
  auto metrics = kspool::testing::ScrapeMetrics(agent->http_address());
  EXPECT_GT(metrics["kspool_grpc_connections_refused_total{reason=\"connection_limit\"}"], 0);
  EXPECT_LT(metrics["kspool_grpc_connections_max"], 1024);
  for (int fd : idle) close(fd);
}

TEST_F(FrontDoor, ConnectionsBeyondMaxConnectionsAreRefusedAtOnce) {
  auto agent = StartAgent("agent", {"--max-connections", "4"});
  const int port = PortOf(agent->address());
  // The agent's own stub is not connected yet: four idle sockets take every place.
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(IdleConnection(port));
  const int fifth = IdleConnection(port);
  ASSERT_GE(fifth, 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ClosedByPeer(fifth, 2s)) << "the fifth connection was kept";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  close(fifth);
  for (int fd : idle) close(fd);
  // Their places free up: a new client gets in.
  kspool::v1::SendResponse resp;
  EXPECT_TRUE(WaitUntil([&] { return agent->Send(OneMessage("demo", "m"), &resp, 1000).ok(); }, 10s));
  EXPECT_GE(kspool::testing::ScrapeMetrics(agent->http_address())
                ["kspool_grpc_connections_refused_total{reason=\"connection_limit\"}"],
            1);
}

TEST_F(FrontDoor, ConnectionsThatNeverSpeakAreClosedAfterTheIdleTimeout) {
  auto agent = StartAgent("agent", {"--idle-timeout", "1s"});
  const int fd = IdleConnection(PortOf(agent->address()));
  ASSERT_GE(fd, 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ClosedByPeer(fd, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  close(fd);
}

TEST_F(FrontDoor, IdleChannelIsClosedAfterTheIdleTimeout) {
  auto agent = StartAgent("agent", {"--idle-timeout", "1s"});
  auto channel = grpc::CreateChannel(agent->address(), grpc::InsecureChannelCredentials());
  kspool::v1::SendResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(kspool::v1::Spool::NewStub(channel)->Send(&ctx, OneMessage("demo", "m"), &resp).ok());
  ASSERT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  // The server's GOAWAY takes the channel out of READY; it reconnects on the next call.
  EXPECT_TRUE(WaitUntil([&] { return channel->GetState(false) != GRPC_CHANNEL_READY; }, 5s));
}

TEST_F(FrontDoor, StalledLargeStreamsStayWithinTheReceiveMemoryBound) {
  auto agent = StartAgent("agent", {"--max-receive-memory", "128MiB"});
  const pid_t pid = agent->process().pid();
  const int64_t base = RssMb(pid);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> peak{0};
  std::thread sampler([&] {
    while (!stop) {
      peak = std::max<int64_t>(peak, RssMb(pid));
      std::this_thread::sleep_for(5ms);
    }
  });
  uint64_t sent = 0;
  {
    // 24 connections x 50 streams, each declaring a 60 MB message and sending 4 MB.
    kspool::testing::H2StallOptions o;
    o.port = PortOf(agent->address());
    o.connections = 24;
    o.streams_per_connection = 50;
    kspool::testing::H2StallClient clients(o);
    sent = clients.Run(3s);
  }
  EXPECT_GT(sent, 128u << 20) << "the clients did not send more than the bound";
#ifndef KSPOOL_SANITIZED
  // Memory falls back once the clients are gone. (Not under a sanitizer: its allocator
  // keeps freed memory in quarantine and its shadow memory grows with the heap, so RSS
  // says nothing about the agent's own bound there.)
  EXPECT_TRUE(WaitUntil([&] { return RssMb(pid) < base + 32; }, 10s, 100ms))
      << "RSS " << RssMb(pid) << " MB, " << base << " MB before";
  EXPECT_LT(peak - base, 128 + 96) << "peak RSS " << peak << " MB, " << base << " MB before";
#endif
  stop = true;
  sampler.join();
  std::printf("receive memory bound 128 MiB: %llu MiB sent, RSS %lld MB before, peak %lld MB\n",
              static_cast<unsigned long long>(sent >> 20), static_cast<long long>(base),
              static_cast<long long>(peak.load()));
  // The agent still serves.
  kspool::v1::SendResponse resp;
  EXPECT_TRUE(agent->Send(OneMessage("demo", "after"), &resp).ok());
  EXPECT_GE(kspool::testing::ScrapeMetrics(agent->http_address())
                ["kspool_grpc_connections_refused_total{reason=\"receive_memory\"}"],
            1);
}

TEST_F(FrontDoor, ABusyClientThatCompletesItsRequestsIsNeverShutDown) {
  // The meter's limit is a quarter of the bound: 8 MiB. One channel sends 24 MB.
  auto agent = StartAgent("agent", {"--max-receive-memory", "32MiB"});
  kspool::v1::SendRequest req;
  for (int i = 0; i < 10; ++i) {
    auto* m = req.add_messages();
    m->set_topic("demo");
    m->set_value(std::string(12'000, 'v'));
  }
  for (int i = 0; i < 200; ++i) {
    kspool::v1::SendResponse resp;
    grpc::Status s = agent->Send(req, &resp);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  auto metrics = kspool::testing::ScrapeMetrics(agent->http_address());
  EXPECT_EQ(metrics["kspool_grpc_connections_refused_total{reason=\"receive_memory\"}"], 0);
  EXPECT_LT(metrics["kspool_receive_memory_bytes"], 1 << 20);
}

TEST_F(FrontDoor, AdminCallsAreCreditedToTheirConnection) {
  auto agent = StartAgent("agent");
  // 3,000 calls of ~35 bytes each on one channel: uncredited, ~100 KB of debt.
  for (int i = 0; i < 3000; ++i) agent->WalStats();
  // Settle into a sweep (every 50 ms) after the last call.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return kspool::testing::ScrapeMetrics(agent->http_address())["kspool_receive_memory_bytes"] <
               16 << 10;
      },
      2s, 100ms))
      << kspool::testing::ScrapeMetrics(agent->http_address())["kspool_receive_memory_bytes"];
}

// True if this machine has IPv6 loopback (an agent on [::] then takes IPv4 clients too).
bool HasIpv6Loopback() {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  close(fd);
  return ok;
}

// The reported defect: on --listen [::]:P the meter named an IPv4 client's socket
// ipv6:[::ffff:127.0.0.1]:N while gRPC named its calls ipv4:127.0.0.1:N, so nothing was
// credited and a healthy client was shut down after ~64 MiB (2 of 200 Sends failed).
TEST_F(FrontDoor, AnIpv4ClientOfADualStackListenerIsCreditedAndNeverShutDown) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback here";
  // The default bound, 256 MiB: the meter's limit is 64 MiB, the Sends total 198 MB.
  auto agent = StartAgent("agent", {"--listen", "[::]:0"});
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(PortOf(agent->address())),
                                     grpc::InsecureChannelCredentials());
  auto stub = kspool::v1::Spool::NewStub(channel);
  const kspool::v1::SendRequest req = OneMessage("demo", std::string(990'000, 'v'));
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    kspool::v1::SendResponse resp;
    grpc::Status s = stub->Send(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  auto metrics = kspool::testing::ScrapeMetrics(agent->http_address());
  EXPECT_EQ(metrics["kspool_grpc_connections_refused_total{reason=\"receive_memory\"}"], 0);
  EXPECT_LT(metrics["kspool_receive_memory_bytes"], 2 << 20);
}

TEST_F(FrontDoor, DeliveryStatusCallsAreCreditedToTheirConnection) {
  auto agent = StartAgent("agent");
  kspool::v1::GetDeliveryStatusRequest req;
  for (int i = 1; i <= 100; ++i) req.add_sequences(1'000'000'000 + i);
  // 2,000 calls of ~500 bytes each on one channel: uncredited, ~1.5 MB of debt.
  for (int i = 0; i < 2000; ++i) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    kspool::v1::GetDeliveryStatusResponse resp;
    ASSERT_TRUE(agent->spool().GetDeliveryStatus(&ctx, req, &resp).ok()) << i;
  }
  EXPECT_TRUE(WaitUntil(
      [&] {
        return kspool::testing::ScrapeMetrics(agent->http_address())["kspool_receive_memory_bytes"] <
               16 << 10;
      },
      2s, 100ms))
      << kspool::testing::ScrapeMetrics(agent->http_address())["kspool_receive_memory_bytes"];
}

TEST_F(FrontDoor, UnixSocketInUseIsRefusedAndAStaleOneIsTakenOver) {
  const std::string sock = "unix:" + dir_.path() + "/agent.sock";
  auto first = StartAgent("first", {"--listen", sock});
  kspool::testing::ChildProcess second(
      {KSPOOL_AGENT_BIN, "--wal-dir", dir_.path() + "/second", "--listen", sock,
       "--metrics-listen", "127.0.0.1:0", "--kafka-brokers", kafka_->bootstrap()},
      dir_.path() + "/second.log");
  std::optional<int> status = second.Wait(30s);
  ASSERT_TRUE(status.has_value()) << "the second agent took over a socket in use";
  EXPECT_NE(ReadFile(dir_.path() + "/second.log").find("Address already in use"), std::string::npos);
  // A crashed agent leaves its socket file behind; the next one takes it over.
  first->process().Signal(SIGKILL);
  first->process().Wait(10s);
  auto third = StartAgent("third", {"--listen", sock});
  kspool::v1::SendResponse resp;
  EXPECT_TRUE(third->Send(OneMessage("demo", "m"), &resp).ok());
}

}  // namespace
}  // namespace kspool
