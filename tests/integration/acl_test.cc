// Access control (--acl) end to end: a real kspool-agent process with mTLS, client
// certificates of several identities made by a throwaway CA, gRPC calls over loopback,
// and the ACL file replaced while the agent runs.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "kspool/v1/admin.grpc.pb.h"
#include "kspool/v1/spool.grpc.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/child_process.h"
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

constexpr char kRules[] = R"(# the agent's rules in the tests
[[allow]]
identity = "cn:orders-api"
send = ["orders", "orders.*"]

[[allow]]
identity = "spiffe://test/ns/batch/sa/loader"
send = ["orders"]
messages_per_second = 1000

[[allow]]
identity = "cn:ops"
admin = true
)";

// One client identity: its own channel (a connection and handshake of its own).
struct Client {
  Client(const std::string& address, const std::string& ca, const CertAndKey& cert) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadWholeFile(ca);
    o.pem_cert_chain = ReadWholeFile(cert.cert);
    o.pem_private_key = ReadWholeFile(cert.key);
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(address, grpc::SslCredentials(o), args);
    spool = kspool::v1::Spool::NewStub(channel);
    admin = kspool::v1::Admin::NewStub(channel);
  }
  // Sends one message to each of `topics` in one request; `retry_after_ms` gets the
  // trailer (-1 without one).
  grpc::Status Send(const std::vector<std::string>& topics, int64_t* retry_after_ms = nullptr) {
    kspool::v1::SendRequest req;
    for (const std::string& t : topics) {
      auto* m = req.add_messages();
      m->set_topic(t);
      m->set_value("v");
    }
    kspool::v1::SendResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    grpc::Status s = spool->Send(&ctx, req, &resp);
    if (retry_after_ms) {
      auto it = ctx.GetServerTrailingMetadata().find("retry-after-ms");
      *retry_after_ms = it == ctx.GetServerTrailingMetadata().end()
                            ? -1
                            : std::stoll(std::string(it->second.data(), it->second.size()));
    }
    return s;
  }
  grpc::Status Stats(kspool::v1::GetWalStatsResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    return admin->GetWalStats(&ctx, {}, out);
  }
  std::unique_ptr<kspool::v1::Spool::Stub> spool;
  std::unique_ptr<kspool::v1::Admin::Stub> admin;
};

class Acl : public ::testing::Test {
 protected:
  Acl()
      : ca_(dir_.sub("pki"), "ca"),
        server_(ca_.IssueLocalServer("server")),
        orders_(ca_.Issue("orders", "orders-api", {})),
        loader_(ca_.Issue("loader", "loader", {"URI:spiffe://test/ns/batch/sa/loader"})),
        ops_(ca_.Issue("ops", "ops", {})) {}
  void SetUp() override {
    kafka_ = std::make_unique<kspool::testing::DevKafka>(
        dir_.path(), 1, std::vector<std::string>{"orders:1", "orders.eu:1", "payments:1"});
    WriteAcl(kRules);
    agent_ = std::make_unique<AgentProcess>(
        dir_.sub("wal"), log_, kafka_->bootstrap(),
        std::vector<std::string>{"--tls-cert", server_.cert, "--tls-key", server_.key,
                                 "--tls-client-ca", ca_.ca_cert(), "--acl", acl_});
  }
  // Replaced by a rename, as config maps and editors do.
  void WriteAcl(const std::string& text) {
    std::ofstream(acl_ + ".new") << text;
    ASSERT_EQ(std::rename((acl_ + ".new").c_str(), acl_.c_str()), 0);
  }
  Client As(const CertAndKey& who) { return Client(agent_->address(), ca_.ca_cert(), who); }
  uint64_t Appended() {
    kspool::v1::GetWalStatsResponse st;
    grpc::Status s = As(ops_).Stats(&st);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return st.appended_messages();
  }
  double Metric(const std::string& series) {
    return kspool::testing::ScrapeMetrics(agent_->http_address())[series];
  }
  bool LogHas(const std::string& text) {
    return ReadWholeFile(log_).find(text) != std::string::npos;
  }

  kspool::testing::TempDir dir_;
  std::string acl_ = dir_.sub("acl.toml"), log_ = dir_.sub("agent.log");
  TestPki ca_;
  CertAndKey server_, orders_, loader_, ops_;
  std::unique_ptr<kspool::testing::DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(Acl, AllowedIdentitySendsToItsTopics) {
  Client c = As(orders_);
  grpc::Status s = c.Send({"orders", "orders.eu", "orders"});
  EXPECT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
}

TEST_F(Acl, DeniedTopicWritesNothingAndNamesIdentityAndTopic) {
  const uint64_t before = Appended();
  grpc::Status s = As(orders_).Send({"orders", "payments", "audit"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("identity cn:orders-api may not send to topic \"payments\""),
            std::string::npos)
      << s.error_message();
  EXPECT_EQ(Appended(), before) << "nothing of the request was written";
  EXPECT_EQ(Metric("kspool_send_rejected_total{code=\"PERMISSION_DENIED\"}"), 1);
  EXPECT_EQ(Metric("kspool_acl_denied_total{identity=\"cn:orders-api\"}"), 1);
}

TEST_F(Acl, DeniedRequestOnAStreamIsAnsweredAndTheStreamGoesOn) {
  Client c = As(orders_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  auto stream = c.spool->SendStream(&ctx);
  for (const char* topic : {"payments", "orders"}) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value("v");
    ASSERT_TRUE(stream->Write(req));
  }
  stream->WritesDone();
  kspool::v1::SendResponse r;
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_EQ(r.status().code(), grpc::StatusCode::PERMISSION_DENIED) << r.status().message();
  EXPECT_EQ(r.sequence_size(), 0);
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_EQ(r.status().code(), 0) << r.status().message();
  EXPECT_EQ(r.sequence_size(), 1);
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(Acl, BroadcastNeedsTheSendRightOnEveryTopic) {
  kspool::v1::BroadcastRequest req;
  req.mutable_message()->set_value("v");
  req.add_topics("orders");
  req.add_topics("payments");
  kspool::v1::BroadcastResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  grpc::Status s = As(orders_).spool->Broadcast(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_NE(s.error_message().find("\"payments\""), std::string::npos) << s.error_message();
}

TEST_F(Acl, AdminCallsNeedTheAdminRight) {
  kspool::v1::GetWalStatsResponse st;
  EXPECT_EQ(As(orders_).Stats(&st).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(As(ops_).Stats(&st).ok());
  // WatchDeliveries streams every topic's outcomes: admin too.
  Client c = As(orders_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  auto watch = c.spool->WatchDeliveries(&ctx, {});
  kspool::v1::DeliveryStatus d;
  EXPECT_FALSE(watch->Read(&d));
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(Acl, DeliveryStatusOfATopicTheCallerMayNotSendToReadsAsUnknown) {
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("orders");
  m->set_value("v");
  kspool::v1::SendResponse sent;
  {
    Client loader = As(loader_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    ASSERT_TRUE(loader.spool->Send(&ctx, req, &sent).ok());
  }
  auto status_as = [&](const CertAndKey& who) {
    kspool::v1::GetDeliveryStatusRequest q;
    q.add_sequences(sent.sequence(0));
    kspool::v1::GetDeliveryStatusResponse r;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    EXPECT_TRUE(As(who).spool->GetDeliveryStatus(&ctx, q, &r).ok());
    return r.statuses_size() == 1 ? r.statuses(0) : kspool::v1::DeliveryStatus();
  };
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] { return status_as(ops_).state() == kspool::v1::DeliveryStatus::DELIVERED; }, 5s, 50ms));
  EXPECT_EQ(status_as(ops_).topic(), "orders") << "admin: every topic";
  EXPECT_EQ(status_as(orders_).topic(), "orders") << "a topic it may send to";
  // Now orders-api may send to "payments" only: the outcome on "orders" is not its to see.
  WriteAcl("[[allow]]\nidentity = \"cn:orders-api\"\nsend = [\"payments\"]\n");
  ASSERT_TRUE(kspool::testing::WaitUntil([&] { return As(orders_).Send({"payments"}).ok(); }, 3s));
  const kspool::v1::DeliveryStatus hidden = status_as(orders_);
  EXPECT_EQ(hidden.state(), kspool::v1::DeliveryStatus::STATE_UNKNOWN);
  EXPECT_EQ(hidden.topic(), "");
  EXPECT_EQ(hidden.offset(), -1);
  EXPECT_EQ(hidden.sequence(), sent.sequence(0));
}

// A certificate whose URI SAN spells a built-in identity ("cn:admin", "uid:0") gets
// "uri:cn:admin" and "uri:uid:0", which no rule naming those identities matches.
TEST_F(Acl, UriThatSpellsABuiltInIdentityGetsNoneOfItsRights) {
  const CertAndKey admin = ca_.Issue("admin", "admin", {});
  const CertAndKey eve = ca_.Issue("eve", "eve", {"URI:cn:admin", "URI:uid:0"});
  WriteAcl(std::string(kRules) +
           "[[allow]]\nidentity = \"cn:admin\"\nadmin = true\n"
           "[[allow]]\nidentity = \"uid:0\"\nadmin = true\nsend = [\"*\"]\n");
  kspool::v1::GetWalStatsResponse st;
  ASSERT_TRUE(kspool::testing::WaitUntil([&] { return As(admin).Stats(&st).ok(); }, 3s, 50ms))
      << "the real cn:admin is admin once the rules are in force";
  Client c = As(eve);
  grpc::Status s = c.Stats(&st);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_NE(s.error_message().find("identity cn:eve, uri:cn:admin, uri:uid:0 may not call"),
            std::string::npos)
      << s.error_message();
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    kspool::v1::GetCommitPointResponse cp;
    EXPECT_EQ(c.admin->GetCommitPoint(&ctx, {}, &cp).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(c.Send({"orders"}).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "uid:0 may send anywhere, a URI \"uid:0\" nowhere";
}

// A stream open when the admin right is taken away is ended, not left streaming.
TEST_F(Acl, WatchDeliveriesEndsWithPermissionDeniedWhenAReloadTakesTheAdminRight) {
  Client ops = As(ops_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  kspool::v1::WatchDeliveriesRequest from;
  from.set_from_sequence(1);
  auto watch = ops.spool->WatchDeliveries(&ctx, from);
  ASSERT_TRUE(As(orders_).Send({"orders"}).ok());
  kspool::v1::DeliveryStatus d;
  ASSERT_TRUE(watch->Read(&d)) << "an admin watches every topic";
  EXPECT_EQ(d.topic(), "orders");
  const auto changed = std::chrono::steady_clock::now();
  WriteAcl("[[allow]]\nidentity = \"cn:orders-api\"\nsend = [\"orders\"]\n");
  // No more outcomes are needed to end it; any that come are not written after the end.
  EXPECT_FALSE(watch->Read(&d)) << "streamed " << d.sequence() << " after the reload";
  const grpc::Status end = watch->Finish();
  EXPECT_EQ(end.error_code(), grpc::StatusCode::PERMISSION_DENIED) << end.error_message();
  EXPECT_NE(end.error_message().find("identity cn:ops may not call WatchDeliveries"),
            std::string::npos)
      << end.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - changed, 3s);
}

// Without the admin right, GetDeliveryStatus tells nothing of another topic's messages,
// PENDING ones included, nor the next sequence number.
TEST_F(Acl, DeliveryStatusTellsANonAdminNothingOfAnotherTopicsPendingMessages) {
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");  // so the message stays PENDING
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("orders.eu");
  m->set_value("v");
  kspool::v1::SendResponse sent;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    ASSERT_TRUE(As(orders_).spool->Send(&ctx, req, &sent).ok());
  }
  const uint64_t seq = sent.sequence(0);
  auto status_as = [&](const CertAndKey& who, uint64_t n) {
    kspool::v1::GetDeliveryStatusRequest q;
    q.add_sequences(n);
    kspool::v1::GetDeliveryStatusResponse r;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    EXPECT_TRUE(As(who).spool->GetDeliveryStatus(&ctx, q, &r).ok());
    return r.statuses_size() == 1 ? r.statuses(0) : kspool::v1::DeliveryStatus();
  };
  const kspool::v1::DeliveryStatus own = status_as(orders_, seq);
  EXPECT_EQ(own.state(), kspool::v1::DeliveryStatus::PENDING) << "its own topic";
  EXPECT_EQ(own.topic(), "orders.eu");
  EXPECT_EQ(status_as(ops_, seq).state(), kspool::v1::DeliveryStatus::PENDING) << "admin";
  // The loader may send to "orders" only.
  const kspool::v1::DeliveryStatus hidden = status_as(loader_, seq);
  const kspool::v1::DeliveryStatus unassigned = status_as(loader_, seq + 1000);
  EXPECT_EQ(hidden.state(), kspool::v1::DeliveryStatus::STATE_UNKNOWN);
  EXPECT_EQ(hidden.sequence(), seq);
  EXPECT_EQ(hidden.topic(), "");
  EXPECT_EQ(unassigned.state(), kspool::v1::DeliveryStatus::STATE_UNKNOWN);
  EXPECT_EQ(hidden.error(), unassigned.error()) << "a hidden message reads as an unknown one";
  EXPECT_EQ(unassigned.error().find("next"), std::string::npos) << unassigned.error();
  EXPECT_NE(status_as(ops_, seq + 1000).error().find("not assigned yet (next: "),
            std::string::npos)
      << "admins are told the next sequence number";
  ASSERT_EQ(kafka_->Command("broker up all"), "OK");
}

TEST_F(Acl, QuotaRefusesAFastSenderWithARetryHintWhileAnotherIdentityIsUnaffected) {
  Client loader = As(loader_), orders = As(orders_);
  const std::vector<std::string> batch(100, "orders");
  const uint64_t before = Appended();
  uint64_t accepted = 0, refused = 0, other_failed = 0;
  int64_t hint = -1;
  // 100-message batches every 10 ms: 10,000 msg/s against a quota of 1,000 msg/s.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_until(start + i * 10ms);
    int64_t retry = -1;
    grpc::Status s = loader.Send(batch, &retry);
    if (s.ok()) {
      accepted += batch.size();
    } else {
      ASSERT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
      ++refused;
      hint = retry;
      EXPECT_GE(retry, 1);
      EXPECT_LE(retry, 100) << "100 messages at 1,000/s are at most 100 ms away";
    }
    if (!orders.Send({"orders"}).ok()) ++other_failed;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(refused, 0u);
  EXPECT_GE(hint, 1);
  // The burst (one second of the rate) plus the rate over the run, plus one request.
  EXPECT_LE(accepted, 1000 + 1000 * seconds + 100) << seconds << " s";
  EXPECT_GE(accepted, 1000u) << "the burst at least";
  EXPECT_EQ(other_failed, 0u) << "the other identity has no quota and is not held back";
  EXPECT_EQ(Appended() - before, accepted + 100) << "refused requests wrote nothing";
  EXPECT_EQ(Metric("kspool_quota_refused_total{identity=\"spiffe://test/ns/batch/sa/loader\"}"),
            static_cast<double>(refused));
}

TEST_F(Acl, ChangedFileTakesEffectWithinTwoSeconds) {
  Client c = As(orders_);
  ASSERT_EQ(c.Send({"payments"}).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const auto changed = std::chrono::steady_clock::now();
  WriteAcl("[[allow]]\nidentity = \"cn:orders-api\"\nsend = [\"payments\"]\n");
  ASSERT_TRUE(kspool::testing::WaitUntil([&] { return c.Send({"payments"}).ok(); }, 3s, 50ms));
  const auto took = std::chrono::steady_clock::now() - changed;
  EXPECT_LT(took, 2s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
  EXPECT_EQ(c.Send({"orders"}).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "the old rules are gone";
}

TEST_F(Acl, InvalidReplacementKeepsTheOldRulesWarnsAndIsCounted) {
  WriteAcl("[[allow]]\nidentity = \"cn:orders-api\"\nsend = [\"pay*ments\"]\n");
  EXPECT_TRUE(kspool::testing::WaitUntil(
      [&] { return Metric("kspool_degraded_events_total{event=\"acl_reload_failed\"}") >= 1; }, 3s,
      50ms));
  EXPECT_TRUE(LogHas("rule 1 (line 3): send[0]: \"pay*ments\": a * may only end a topic pattern"));
  EXPECT_TRUE(LogHas("the previous rules stay in force"));
  Client c = As(orders_);
  EXPECT_TRUE(c.Send({"orders"}).ok());
  EXPECT_EQ(c.Send({"payments"}).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(Acl, SighupRereadsTheFileAndTheAgentKeepsServing) {
  agent_->process().Signal(SIGHUP);
  EXPECT_TRUE(
      kspool::testing::WaitUntil([&] { return LogHas("reloaded: 3 rules in force"); }, 3s, 50ms));
  EXPECT_TRUE(agent_->process().running());
  EXPECT_TRUE(As(orders_).Send({"orders"}).ok());
}

// The first address of this host that is not a loopback one ("" if it has none): a
// peer the agent sees as remote.
std::string NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (ifaddrs* i = all; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN];
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text))) found = text;
  }
  freeifaddrs(all);
  return found;
}

// /status and /discards show every topic's data and refused payloads: with --acl (or
// --http-detail-from loopback) only loopback peers get them; /metrics and /healthz stay
// open to Prometheus and the probes.
TEST(AclHttp, StatusAndDiscardsAreRefusedToPeersBeyondLoopback) {
  const std::string remote = NonLoopbackAddress();
  if (remote.empty()) GTEST_SKIP() << "this host has no address but loopback";
  kspool::testing::TempDir dir;
  kspool::testing::DevKafka kafka(dir.path(), 1, {"t:1"});
  std::ofstream(dir.sub("acl.toml")) << "[[allow]]\nidentity = \"anonymous\"\nsend = [\"t\"]\n";
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--acl", dir.sub("acl.toml")},
        std::vector<std::string>{"--http-detail-from", "loopback"}}) {
    std::vector<std::string> args = {"--metrics-listen", "0.0.0.0:0"};
    args.insert(args.end(), flags.begin(), flags.end());
    const std::string name = flags[0].substr(2);
    AgentProcess agent(dir.sub("wal-" + name), dir.sub(name + ".log"), kafka.bootstrap(), args);
    const std::string port = agent.http_address().substr(agent.http_address().rfind(':'));
    for (const char* path : {"/status", "/discards"}) {
      const auto refused = kspool::testing::HttpGet(remote + port, path);
      EXPECT_EQ(refused.status, 403) << flags[0] << " " << path << " from " << remote;
      EXPECT_EQ(refused.body.find("{"), std::string::npos) << refused.body;
      EXPECT_EQ(kspool::testing::HttpGet("127.0.0.1" + port, path).status, 200)
          << flags[0] << " " << path << " from loopback";
    }
    EXPECT_EQ(kspool::testing::HttpGet(remote + port, "/healthz").status, 200) << flags[0];
    EXPECT_FALSE(kspool::testing::ScrapeMetrics(remote + port).empty()) << flags[0];
  }
}

// Without TLS every caller is "anonymous", which rules can name.
TEST(AclAnonymous, PlaintextCallersAreAnonymous) {
  kspool::testing::TempDir dir;
  kspool::testing::DevKafka kafka(dir.path(), 1, {"public:1", "orders:1"});
  std::ofstream(dir.sub("acl.toml"))
      << "[[allow]]\nidentity = \"anonymous\"\nsend = [\"public\"]\n";
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--acl", dir.sub("acl.toml")});
  auto send = [&](const std::string& topic) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value("v");
    kspool::v1::SendResponse resp;
    return agent.Send(req, &resp);
  };
  EXPECT_TRUE(send("public").ok());
  grpc::Status s = send("orders");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("identity anonymous may not send"), std::string::npos)
      << s.error_message();
}

TEST(AclStart, InvalidFileAtStartExitsTwoNamingTheFileAndTheProblem) {
  kspool::testing::TempDir dir;
  const std::string acl = dir.sub("acl.toml");
  std::ofstream(acl) << "[[allow]]\nidentity = \"cn:a\"\nmessages_per_second = -5\n";
  kspool::testing::ChildProcess p({KSPOOL_AGENT_BIN, "--wal-dir", dir.sub("wal"), "--listen",
                                   "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--acl", acl},
                                  dir.sub("agent.log"));
  std::optional<int> status = p.Wait(30s);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(ReadWholeFile(dir.sub("agent.log"))
                .find("--acl " + acl + ": rule 1 (line 3): messages_per_second: must be above 0"),
            std::string::npos)
      << ReadWholeFile(dir.sub("agent.log"));
}

TEST(AclStart, ListeningBeyondLoopbackWithoutAclWarns) {
  kspool::testing::TempDir dir;
  kspool::testing::DevKafka kafka(dir.path(), 1, {"t:1"});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--listen", "0.0.0.0:0"});
  EXPECT_NE(ReadWholeFile(dir.sub("agent.log")).find("reachable from other hosts without --acl"),
            std::string::npos);
}

}  // namespace
}  // namespace kspool
