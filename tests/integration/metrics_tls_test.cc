// HTTPS on the metrics/HTTP listener (--metrics-tls-cert, --metrics-tls-key): a real
// kspool-agent process, curl as the client, certificate files replaced while it runs.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CertAndKey;
using kspool::testing::ReplaceFile;
using namespace std::chrono_literals;

struct CurlResult {
  int exit_code = -1;
  std::string body;
};

// GET https://ADDRESS/PATH trusting only `ca`, within 2 s.
CurlResult Curl(const std::string& ca, const std::string& address, const std::string& path) {
  const std::string cmd =
      "curl -sS --max-time 2 --cacert '" + ca + "' 'https://" + address + path + "' 2>/dev/null";
  CurlResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.body.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class MetricsTls : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<kspool::testing::DevKafka>(dir_.path(), 1,
                                                         std::vector<std::string>{"events:1"});
    ReplaceFile(server_.cert, cert_);
    ReplaceFile(server_.key, key_);
    agent_ = std::make_unique<AgentProcess>(
        dir_.sub("wal"), dir_.sub("agent.log"), kafka_->bootstrap(),
        std::vector<std::string>{"--metrics-tls-cert", cert_, "--metrics-tls-key", key_});
  }
  double Counter(const std::string& event) {
    CurlResult r = Curl(ca_.ca_cert(), agent_->http_address(), "/metrics");
    const std::string line = "kspool_degraded_events_total{event=\"" + event + "\"} ";
    const size_t at = r.body.find(line);
    return at == std::string::npos ? 0 : std::stod(r.body.substr(at + line.size()));
  }

  kspool::testing::TempDir dir_;
  kspool::testing::TestPki ca_{dir_.sub("pki"), "a"};
  kspool::testing::TestPki other_ca_{dir_.sub("pki"), "b"};
  CertAndKey server_ = ca_.IssueLocalServer("server");
  std::string cert_ = dir_.sub("metrics.pem"), key_ = dir_.sub("metrics.key");
  std::unique_ptr<kspool::testing::DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(MetricsTls, MetricsAndHealthAreServedOverHttps) {
  CurlResult health = Curl(ca_.ca_cert(), agent_->http_address(), "/healthz");
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(health.body, "ok\n");
  CurlResult metrics = Curl(ca_.ca_cert(), agent_->http_address(), "/metrics");
  EXPECT_NE(metrics.body.find("kspool_wal_healthy"), std::string::npos);
  // Plain HTTP gets no response.
  EXPECT_EQ(kspool::testing::HttpGet(agent_->http_address(), "/healthz", 2s).status, 0);
  // A client trusting another CA refuses the agent (curl: 60, peer certificate).
  EXPECT_EQ(Curl(other_ca_.ca_cert(), agent_->http_address(), "/healthz").exit_code, 60);
}

TEST_F(MetricsTls, ClientStalledInTheHandshakeHoldsUpNobody) {
  // A TCP connection that never starts its TLS handshake.
  const std::string& a = agent_->http_address();
  const int port = std::stoi(a.substr(a.rfind(':') + 1));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  EXPECT_EQ(Curl(ca_.ca_cert(), a, "/healthz").body, "ok\n");
  close(fd);
}

TEST_F(MetricsTls, ReplacedCertificateIsServedToNewConnectionsWithinTwoSeconds) {
  const CertAndKey next = other_ca_.IssueLocalServer("next");
  const auto replaced = std::chrono::steady_clock::now();
  ReplaceFile(next.key, key_);
  ReplaceFile(next.cert, cert_);
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] { return Curl(other_ca_.ca_cert(), agent_->http_address(), "/healthz").exit_code == 0; },
      3s, 50ms));
  EXPECT_LT(std::chrono::steady_clock::now() - replaced, 2s);
}

TEST_F(MetricsTls, UnusableReplacementKeepsTheOldCertificateWarnsAndIsCounted) {
  const CertAndKey unrelated = ca_.IssueLocalServer("unrelated");
  ReplaceFile(unrelated.key, key_);     // a key of another certificate
  std::this_thread::sleep_for(1100ms);  // the agent looks at most once a second
  EXPECT_TRUE(kspool::testing::WaitUntil([&] { return Counter("metrics_tls_reload_failed") >= 1; },
                                         3s, 100ms));
  EXPECT_EQ(Curl(ca_.ca_cert(), agent_->http_address(), "/healthz").body, "ok\n");
  EXPECT_NE(kspool::testing::ReadWholeFile(dir_.sub("agent.log"))
                .find("metrics TLS files changed but cannot be used"),
            std::string::npos);
}

}  // namespace
}  // namespace kspool
