// TLS and mTLS on the gRPC listener, end to end: a real kspool-agent process with
// certificates made by a throwaway CA in the test, gRPC clients over loopback, and
// certificate files replaced on disk while the agent runs.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kspool/v1/spool.grpc.pb.h"
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
using kspool::testing::ReadWholeFile;
using kspool::testing::TestPki;
using namespace std::chrono_literals;

// A channel of its own (no subchannel shared with other channels), so every channel
// is a new connection with a new handshake.
std::shared_ptr<grpc::Channel> Channel(const std::string& address,
                                       std::shared_ptr<grpc::ChannelCredentials> creds) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, creds, args);
}

// Trusts `ca`; shows `client` when given.
std::shared_ptr<grpc::Channel> TlsChannel(const std::string& address, const std::string& ca,
                                          const CertAndKey* client = nullptr) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = ReadWholeFile(ca);
  if (client) {
    o.pem_cert_chain = ReadWholeFile(client->cert);
    o.pem_private_key = ReadWholeFile(client->key);
  }
  return Channel(address, grpc::SslCredentials(o));
}

grpc::Status SendOne(const std::shared_ptr<grpc::Channel>& channel,
                     std::chrono::milliseconds timeout = 5s) {
  auto stub = kspool::v1::Spool::NewStub(channel);
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("events");
  m->set_value("over tls");
  kspool::v1::SendResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return stub->Send(&ctx, req, &resp);
}

class Tls : public ::testing::Test {
 protected:
  Tls()
      : ca_(dir_.sub("pki"), "a"),
        other_ca_(dir_.sub("pki"), "b"),
        server_(ca_.IssueLocalServer("server")),
        client_(ca_.Issue("client", "client-a", {"URI:spiffe://test/ns/a/sa/b"})),
        stranger_(other_ca_.Issue("stranger", "client-a", {"URI:spiffe://test/ns/a/sa/b"})) {}
  void SetUp() override {
    kafka_ = std::make_unique<kspool::testing::DevKafka>(dir_.path(), 1,
                                                         std::vector<std::string>{"events:1"});
  }
  // The agent serves copies of the server files, which tests replace.
  void StartAgent(bool mtls, std::vector<std::string> args = {}) {
    ReplaceFile(server_.cert, cert_);
    ReplaceFile(server_.key, key_);
    args.insert(args.end(), {"--tls-cert", cert_, "--tls-key", key_});
    if (mtls) args.insert(args.end(), {"--tls-client-ca", ca_.ca_cert()});
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), dir_.sub("agent.log"),
                                            kafka_->bootstrap(), args);
  }
  static void ReplaceFile(const std::string& from, const std::string& to) {
    kspool::testing::ReplaceFile(from, to);
  }

  kspool::testing::TempDir dir_;
  TestPki ca_, other_ca_;
  CertAndKey server_, client_, stranger_;
  std::string cert_ = dir_.sub("served.pem"), key_ = dir_.sub("served.key");
  std::unique_ptr<kspool::testing::DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(Tls, ClientTrustingTheAgentsCaSends) {
  StartAgent(/*mtls=*/false);
  grpc::Status s = SendOne(TlsChannel(agent_->address(), ca_.ca_cert()));
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
}

TEST_F(Tls, PlaintextClientIsRefused) {
  StartAgent(/*mtls=*/false);
  grpc::Status s = SendOne(Channel(agent_->address(), grpc::InsecureChannelCredentials()), 2s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(Tls, ClientTrustingAnotherCaRefusesTheAgent) {
  StartAgent(/*mtls=*/false);
  grpc::Status s = SendOne(TlsChannel(agent_->address(), other_ca_.ca_cert()), 2s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(Tls, ClientWithoutCertificateIsRefusedAtTheHandshake) {
  StartAgent(/*mtls=*/true);
  grpc::Status s = SendOne(TlsChannel(agent_->address(), ca_.ca_cert()), 2s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(Tls, ClientWithCertificateFromAnotherCaIsRefusedAtTheHandshake) {
  StartAgent(/*mtls=*/true);
  grpc::Status s = SendOne(TlsChannel(agent_->address(), ca_.ca_cert(), &stranger_), 2s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(Tls, ClientWithCertificateFromTheClientCaSends) {
  StartAgent(/*mtls=*/true);
  grpc::Status s = SendOne(TlsChannel(agent_->address(), ca_.ca_cert(), &client_));
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
}

// The reception meter credits a TLS connection like a plaintext one: what the kernel
// received (TLS records) is paid by the requests completed.
TEST_F(Tls, AClientThatCompletesItsRequestsIsNeverShutDownByTheReceptionMeter) {
  // The meter's limit is a quarter of the bound: 16 MiB. One channel sends 99 MB.
  StartAgent(/*mtls=*/true, {"--max-receive-memory", "64MiB"});
  auto stub = kspool::v1::Spool::NewStub(TlsChannel(agent_->address(), ca_.ca_cert(), &client_));
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("events");
  m->set_value(std::string(990'000, 'v'));
  for (int i = 0; i < 100; ++i) {
    kspool::v1::SendResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    grpc::Status s = stub->Send(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
  }
  auto metrics = kspool::testing::ScrapeMetrics(agent_->http_address());
  EXPECT_EQ(metrics["kspool_grpc_connections_refused_total{reason=\"receive_memory\"}"], 0);
  EXPECT_LT(metrics["kspool_receive_memory_bytes"], 2 << 20);
}

TEST_F(Tls, ReplacedCertificateIsServedToNewConnectionsWithinTwoSeconds) {
  StartAgent(/*mtls=*/false);
  auto open = TlsChannel(agent_->address(), ca_.ca_cert());
  ASSERT_TRUE(SendOne(open).ok());
  // Rotate to a certificate of another CA: only a client trusting that CA can tell.
  const CertAndKey next = other_ca_.IssueLocalServer("next-server");
  ASSERT_FALSE(SendOne(TlsChannel(agent_->address(), other_ca_.ca_cert()), 1s).ok());
  const auto replaced = std::chrono::steady_clock::now();
  ReplaceFile(next.key, key_);
  ReplaceFile(next.cert, cert_);
  bool served = kspool::testing::WaitUntil(
      [&] { return SendOne(TlsChannel(agent_->address(), other_ca_.ca_cert()), 300ms).ok(); }, 3s,
      50ms);
  const auto took = std::chrono::steady_clock::now() - replaced;
  ASSERT_TRUE(served) << "the new certificate was not served";
  EXPECT_LT(took, 2s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
  // A connection made before keeps its session; new ones trusting the old CA fail.
  EXPECT_TRUE(SendOne(open).ok());
  EXPECT_FALSE(SendOne(TlsChannel(agent_->address(), ca_.ca_cert()), 1s).ok());
}

TEST_F(Tls, UnusableReplacementKeepsTheOldCertificateWarnsAndIsCounted) {
  StartAgent(/*mtls=*/false);
  // A key that does not belong to the certificate: gRPC must keep the old pair.
  const CertAndKey unrelated = ca_.IssueLocalServer("unrelated");
  ReplaceFile(unrelated.key, key_);
  const std::string counter = "kspool_degraded_events_total{event=\"tls_reload_failed\"}";
  EXPECT_TRUE(kspool::testing::WaitUntil(
      [&] { return kspool::testing::ScrapeMetrics(agent_->http_address())[counter] >= 1; }, 5s,
      100ms));
  EXPECT_NE(ReadWholeFile(dir_.sub("agent.log")).find("TLS files changed but cannot be used"),
            std::string::npos);
  std::this_thread::sleep_for(1500ms);  // past gRPC's own refresh
  grpc::Status s = SendOne(TlsChannel(agent_->address(), ca_.ca_cert()));
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  // Repaired: reported as reloaded.
  ReplaceFile(server_.key, key_);
  EXPECT_TRUE(kspool::testing::WaitUntil(
      [&] {
        return ReadWholeFile(dir_.sub("agent.log")).find("TLS files reloaded") != std::string::npos;
      },
      5s, 100ms));
}

TEST_F(Tls, StagedCopiesOfAKilledAgentAreRemovedByTheNextStart) {
  // A directory as a killed agent leaves it: named for a process that is gone.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::filesystem::path stale =
      std::filesystem::temp_directory_path() / ("kspool-tls-" + std::to_string(gone) + "-test");
  std::filesystem::create_directories(stale);
  std::ofstream(stale / "identity.pem") << "a key";
  StartAgent(/*mtls=*/false);
  EXPECT_FALSE(std::filesystem::exists(stale));
  // The running agent's own copies stay while it runs.
  const std::string own = "kspool-tls-" + std::to_string(agent_->process().pid()) + "-";
  bool found = false;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    found = found || e.path().filename().string().rfind(own, 0) == 0;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace kspool
