// PeerIdentities of unix-socket callers, through the agent's real GrpcListener and a real
// gRPC server in process: SO_PEERCRED read at accept reaches the call as "uid:N",
// "gid:N"; more distinct peers than slots are refused and counted; TLS on a unix socket
// keeps working, with certificate identities only.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "agent/net/grpc_listener.h"
#include "agent/security/peer_identity.h"
#include "agent/security/tls_credentials.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"
#include "tests/support/wait.h"

namespace kspool::agent {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;

class UnixPeerRecorder final : public kspool::v1::Admin::Service {
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

class UnixPeerIdentity : public ::testing::Test {
 protected:
  // `tls`: null for plaintext. `slots`: unix peer slots; `fake_uid`: when set, every
  // connection claims to come from uid *fake_uid (gid 100) instead of SO_PEERCRED.
  void Serve(std::shared_ptr<grpc::ServerCredentials> tls, size_t slots = kDefaultUnixPeerSlots,
             bool fake_peers = false) {
    GrpcListenerOptions o;
    o.address = "unix:" + dir_.sub("grpc.sock");
    o.unix_peer_slots = slots;
    o.on_refused = [this](std::string_view reason) {
      std::lock_guard<std::mutex> lock(refused_mu_);
      refused_.emplace_back(reason);
    };
    if (fake_peers) {
      o.peer_of = [this](int) -> absl::StatusOr<UnixPeer> {
        if (next_uid_ == kNoCredentials) return absl::InternalError("SO_PEERCRED: test");
        return UnixPeer{next_uid_.load(), 100};
      };
    }
    absl::StatusOr<std::unique_ptr<GrpcListener>> l = GrpcListener::Listen(std::move(o));
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(l).value();
    grpc::ServerBuilder b;
    listener_->AddAcceptors(&b, std::move(tls));
    b.RegisterService(&recorder_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_);
    listener_->Start();
  }
  std::shared_ptr<grpc::Channel> Channel(
      std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials()) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    args.SetSslTargetNameOverride("localhost");
    return grpc::CreateCustomChannel(listener_->address(), creds, args);
  }
  // The identities the server saw for one call, or {"<call failed: ...>"}.
  std::vector<std::string> Call(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 3s);
    kspool::v1::GetCommitPointResponse resp;
    grpc::Status s = kspool::v1::Admin::NewStub(channel)->GetCommitPoint(&ctx, {}, &resp);
    if (!s.ok()) return {"<call failed: " + s.error_message() + ">"};
    std::lock_guard<std::mutex> lock(recorder_.mu);
    return recorder_.last;
  }
  std::vector<std::string> Refused() {
    std::lock_guard<std::mutex> lock(refused_mu_);
    return refused_;
  }
  void TearDown() override {
    if (listener_) listener_->Stop();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + 2s);
    server_.reset();
    listener_.reset();
  }

  kspool::testing::TempDir dir_;
  UnixPeerRecorder recorder_;
  std::unique_ptr<GrpcListener> listener_;
  std::unique_ptr<grpc::Server> server_;
  static constexpr uid_t kNoCredentials = 0xffffffff;  // peer_of fails
  std::atomic<uid_t> next_uid_{1000};
  std::mutex refused_mu_;
  std::vector<std::string> refused_;
};

TEST_F(UnixPeerIdentity, AUnixSocketClientIsIdentifiedByItsUidAndGid) {
  Serve(nullptr);
  const std::string uid = "uid:" + std::to_string(geteuid());
  const std::string gid = "gid:" + std::to_string(getegid());
  auto channel = Channel();
  EXPECT_THAT(Call(channel), ElementsAre(uid, gid));
  EXPECT_THAT(Call(channel), ElementsAre(uid, gid));    // per call, not piled up on the connection
  EXPECT_THAT(Call(Channel()), ElementsAre(uid, gid));  // a second connection shares the slot
}

// The identities live in the connection's auth context, which gRPC shares between the
// calls on it: concurrent first calls must neither pile them up nor race.
TEST_F(UnixPeerIdentity, ConcurrentCallsOnOneConnectionEachSeeTheIdentitiesOnce) {
  Serve(nullptr);
  const std::vector<std::string> want = {"uid:" + std::to_string(geteuid()),
                                         "gid:" + std::to_string(getegid())};
  auto channel = Channel();
  ASSERT_TRUE(channel->WaitForConnected(std::chrono::system_clock::now() + 3s));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) wrong += Call(channel) != want;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Call(channel), want);
}

TEST_F(UnixPeerIdentity, MorePeersThanSlotsAreRefusedUntilASlotIsFree) {
  Serve(nullptr, /*slots=*/1, /*fake_peers=*/true);
  auto first = Channel();
  ASSERT_THAT(Call(first), ElementsAre("uid:1000", "gid:100"));

  next_uid_ = 1001;  // another user while uid 1000 is connected: no slot for it
  auto second = Channel();
  EXPECT_THAT(Call(second)[0], ::testing::StartsWith("<call failed"));
  EXPECT_TRUE(kspool::testing::WaitUntil(  // counted right after the reset
      [&] { return ::testing::Value(Refused(), ::testing::Contains("unix_peer_slots")); }, 2s));
  EXPECT_THAT(Call(first), ElementsAre("uid:1000", "gid:100"));  // the first is untouched

  // uid 1000 leaves: once gRPC has closed its connection, its slot is uid 1001's.
  first.reset();
  second.reset();
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] {
        return Call(Channel()) == std::vector<std::string>{"uid:1001", "gid:100"};
      },
      5s, 100ms));
}

TEST_F(UnixPeerIdentity, AConnectionWhosePeerCannotBeReadIsRefused) {
  Serve(nullptr, kDefaultUnixPeerSlots, /*fake_peers=*/true);
  next_uid_ = kNoCredentials;
  EXPECT_THAT(Call(Channel())[0], ::testing::StartsWith("<call failed"));
  EXPECT_TRUE(kspool::testing::WaitUntil(  // counted right after the reset
      [&] { return ::testing::Value(Refused(), ::testing::Contains("unix_peer_unknown")); }, 2s));
  next_uid_ = 1000;
  EXPECT_THAT(Call(Channel()), ElementsAre("uid:1000", "gid:100"));
}

TEST_F(UnixPeerIdentity, TlsOnAUnixSocketIdentifiesByCertificateOnly) {
  kspool::testing::TestPki pki(dir_.sub("pki"), "a");
  const kspool::testing::CertAndKey server = pki.IssueLocalServer("server");
  const kspool::testing::CertAndKey client = pki.Issue("client", "orders-api", {});
  Serve(MakeTlsServerCredentials(TlsFiles{server.cert, server.key, pki.ca_cert()}));
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = kspool::testing::ReadWholeFile(pki.ca_cert());
  o.pem_cert_chain = kspool::testing::ReadWholeFile(client.cert);
  o.pem_private_key = kspool::testing::ReadWholeFile(client.key);
  EXPECT_THAT(Call(Channel(grpc::SslCredentials(o))), ElementsAre("cn:orders-api"));
}

}  // namespace
}  // namespace kspool::agent
