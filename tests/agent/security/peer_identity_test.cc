// PeerIdentities over real handshakes: an in-process gRPC server on loopback with
// certificates made by a throwaway CA, and clients with and without certificates.
#include "agent/security/peer_identity.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>

#include <mutex>

#include "agent/security/tls_credentials.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace kspool::agent {
namespace {

using kspool::testing::CertAndKey;
using kspool::testing::ReadWholeFile;
using ::testing::ElementsAre;

// Answers GetCommitPoint and keeps the caller's identities.
class Recorder final : public kspool::v1::Admin::Service {
 public:
  grpc::Status GetCommitPoint(grpc::ServerContext* ctx, const kspool::v1::GetCommitPointRequest*,
                              kspool::v1::GetCommitPointResponse*) override {
    std::lock_guard<std::mutex> lock(mu);
    last = PeerIdentities(*ctx);
    return grpc::Status::OK;
  }
  std::mutex mu;
  std::vector<std::string> last;
};

class PeerIdentity : public ::testing::Test {
 protected:
  void Serve(std::shared_ptr<grpc::ServerCredentials> creds) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", creds, &port_);
    b.RegisterService(&recorder_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_ && port_ > 0);
  }
  void ServeTls(bool mtls) {
    Serve(MakeTlsServerCredentials(
        TlsFiles{server_files_.cert, server_files_.key, mtls ? pki_.ca_cert() : std::string()}));
  }
  // The identities the server saw for one call, or {"<call failed: ...>"}.
  std::vector<std::string> Call(std::shared_ptr<grpc::ChannelCredentials> creds) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = kspool::v1::Admin::NewStub(
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_), creds, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    kspool::v1::GetCommitPointResponse resp;
    grpc::Status s = stub->GetCommitPoint(&ctx, {}, &resp);
    if (!s.ok()) return {"<call failed: " + s.error_message() + ">"};
    std::lock_guard<std::mutex> lock(recorder_.mu);
    return recorder_.last;
  }
  std::shared_ptr<grpc::ChannelCredentials> Tls(const CertAndKey* client) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadWholeFile(pki_.ca_cert());
    if (client) {
      o.pem_cert_chain = ReadWholeFile(client->cert);
      o.pem_private_key = ReadWholeFile(client->key);
    }
    return grpc::SslCredentials(o);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  kspool::testing::TempDir dir_;
  kspool::testing::TestPki pki_{dir_.sub("pki"), "a"};
  CertAndKey server_files_ = pki_.IssueLocalServer("server");
  Recorder recorder_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(PeerIdentity, ClientCertificateGivesCommonNameDnsNamesAndUris) {
  ServeTls(/*mtls=*/true);
  const CertAndKey client =
      pki_.Issue("client", "orders-api",
                 {"URI:spiffe://test/ns/a/sa/b", "DNS:orders.test", "DNS:orders-2.test"});
  EXPECT_THAT(Call(Tls(&client)), ElementsAre("cn:orders-api", "dns:orders.test",
                                              "dns:orders-2.test",
                                              "uri:spiffe://test/ns/a/sa/b"));
}

TEST_F(PeerIdentity, UriThatSpellsABuiltInIdentityKeepsItsUriPrefix) {
  ServeTls(/*mtls=*/true);
  const CertAndKey eve = pki_.Issue("eve", "eve", {"URI:cn:admin", "URI:uid:0"});
  EXPECT_THAT(Call(Tls(&eve)), ElementsAre("cn:eve", "uri:cn:admin", "uri:uid:0"));
}

TEST_F(PeerIdentity, CertificateWithOnlyACommonNameGivesJustIt) {
  ServeTls(/*mtls=*/true);
  const CertAndKey client = pki_.Issue("plain", "batch-job", {});
  EXPECT_THAT(Call(Tls(&client)), ElementsAre("cn:batch-job"));
}

TEST_F(PeerIdentity, TlsWithoutClientCertificateIsAnonymous) {
  ServeTls(/*mtls=*/false);
  EXPECT_THAT(Call(Tls(nullptr)), ElementsAre("anonymous"));
}

TEST_F(PeerIdentity, PlaintextTcpIsAnonymous) {
  Serve(grpc::InsecureServerCredentials());
  EXPECT_THAT(Call(grpc::InsecureChannelCredentials()), ElementsAre("anonymous"));
}

TEST(PeerIdentityWithoutContext, NoAuthContextIsAnonymous) {
  EXPECT_THAT(PeerIdentities(static_cast<const grpc::AuthContext*>(nullptr)),
              ElementsAre("anonymous"));
}

}  // namespace
}  // namespace kspool::agent
