// SpoolService in process: a real WAL in a temp dir, real gRPC on a loopback port, an
// injected clock. Malformed requests, client timestamps, the receive memory budget, and
// WAIT_FOR_KAFKA Sends and streams (with the drain's part played by the test).
#include "agent/api/spool_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "base/clock.h"
#include "tests/support/raw_call.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "wal/wal.h"

namespace kspool::agent {
namespace {

using namespace std::chrono_literals;

using kspool::testing::RawUnaryCall;

constexpr int64_t kNow = 1'700'000'000'000;
constexpr char kSend[] = "/kspool.v1.Spool/Send";

class SpoolServiceTest : public ::testing::Test {
 protected:
  void Start(uint64_t receive_memory_bytes = 0) {
    wal::Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    auto wal = wal::Wal::Open(o);
    ASSERT_TRUE(wal.ok()) << wal.status();
    wal_ = std::move(wal).value();
    feed_ = std::make_unique<DeliveryFeed>(wal_.get());
    service_ = std::make_unique<SpoolService>(
        wal_.get(), wal_.get(), RequestLimits{}, [] {},
        [](absl::StatusCode) { return int64_t{123}; },
        nullptr, nullptr, &clock_, receive_memory_bytes, &waiters_, feed_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port > 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
    stub_ = kspool::v1::Spool::NewStub(channel_);
  }
  void TearDown() override {
    waiters_.Close();
    if (feed_) feed_->Close();
    if (server_) server_->Shutdown();
    service_.reset();
    wal_.reset();
  }

  grpc::Status Send(const kspool::v1::SendRequest& req, kspool::v1::SendResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->Send(&ctx, req, resp);
  }

  static kspool::v1::SendRequest OneMessage(const std::string& value) {
    kspool::v1::SendRequest r;
    auto* m = r.add_messages();
    m->set_topic("t");
    m->set_value(value);
    return r;
  }

  std::vector<wal::Entry> Entries() {
    std::vector<wal::Entry> out;
    EXPECT_TRUE(wal_->Scan(0, 10000, 1 << 20, &out).ok());
    return out;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{kNow};
  DeliveryWaiters waiters_{&clock_};
  std::unique_ptr<DeliveryFeed> feed_;
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<SpoolService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kspool::v1::Spool::Stub> stub_;
};

TEST_F(SpoolServiceTest, GarbageBytesAreInvalidArgumentNamingTheRequestType) {
  Start();
  auto reply = RawUnaryCall(channel_, kSend, std::string("\xff\xff\xff\xff\x0f garbage", 13));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(reply.status.error_message(), "request is not a valid kspool.v1.SendRequest (13 bytes)");
}

TEST_F(SpoolServiceTest, ATruncatedRequestIsInvalidArgument) {
  Start();
  std::string full = OneMessage("value").SerializeAsString();
  auto reply = RawUnaryCall(channel_, kSend, full.substr(0, full.size() - 2));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(reply.status.error_message().find("not a valid kspool.v1.SendRequest"),
            std::string::npos);
}

TEST_F(SpoolServiceTest, InvalidUtf8InAStringFieldNamesTheMessageAndField) {
  Start();
  kspool::v1::wire::SendRequest req;  // what a client with a bytes-typed mirror can send
  for (const char* topic : {"ok", "ok", "bad\xff"}) {
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value("v");
  }
  auto reply = RawUnaryCall(channel_, kSend, req.SerializeAsString());
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(reply.status.error_message(), "message 2: topic: not valid UTF-8");
  EXPECT_TRUE(Entries().empty());
}

TEST_F(SpoolServiceTest, AValidRawRequestIsAnsweredWithAParsableResponse) {
  Start();
  auto reply = RawUnaryCall(channel_, kSend, OneMessage("v").SerializeAsString());
  ASSERT_TRUE(reply.status.ok()) << reply.status.error_message();
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(resp.ParseFromString(reply.body));
  ASSERT_EQ(resp.sequence_size(), 1);
  EXPECT_EQ(resp.receive_time_ms(), kNow);
}

TEST_F(SpoolServiceTest, TimestampsAreCheckedAgainstTheInjectedClock) {
  Start();
  kspool::v1::SendRequest req = OneMessage("v");
  kspool::v1::SendResponse resp;
  req.mutable_messages(0)->set_timestamp_ms(kNow + 3'600'000);
  EXPECT_TRUE(Send(req, &resp).ok());
  req.mutable_messages(0)->set_timestamp_ms(kNow + 3'600'001);
  grpc::Status s = Send(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("message 0: timestamp_ms:"), std::string::npos);
  clock_.Advance(1);
  EXPECT_TRUE(Send(req, &resp).ok()) << "a millisecond later it is within the bound";
}

TEST_F(SpoolServiceTest, AnExplicitZeroTimestampIsStoredAsZeroAndAnAbsentOneAsAbsent) {
  Start();
  kspool::v1::SendRequest req = OneMessage("zero");
  req.mutable_messages(0)->set_timestamp_ms(0);
  *req.add_messages() = OneMessage("absent").messages(0);
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(Send(req, &resp).ok());
  std::vector<wal::Entry> entries = Entries();
  ASSERT_EQ(entries.size(), 2u);
  ASSERT_TRUE(entries[0].record.client_timestamp_ms.has_value());
  EXPECT_EQ(*entries[0].record.client_timestamp_ms, 0);
  EXPECT_FALSE(entries[1].record.client_timestamp_ms.has_value());
}

TEST_F(SpoolServiceTest, ASendBeyondTheReceiveMemoryBoundIsResourceExhaustedWithRetryAfter) {
  Start(/*receive_memory_bytes=*/200);
  auto reply = RawUnaryCall(channel_, kSend, OneMessage(std::string(300, 'x')).SerializeAsString());
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(reply.status.error_message().find("receive memory full (0 of 200 bytes in use"),
            std::string::npos)
      << reply.status.error_message();
  ASSERT_EQ(reply.trailers.count("retry-after-ms"), 1u);
  EXPECT_EQ(reply.trailers.find("retry-after-ms")->second, "123");
  EXPECT_TRUE(Entries().empty());

  kspool::v1::SendResponse resp;
  EXPECT_TRUE(Send(OneMessage("small"), &resp).ok());
  EXPECT_EQ(service_->receive_memory().in_use(), 0u) << "freed once the append completed";
  EXPECT_EQ(service_->receive_memory().bound(), 200u);
}

// A WAIT_FOR_WAL Send's call ends on whichever thread completes it (its reactor is
// inlineable): Sends whose clients go away at any point of their append end cleanly
// (the sanitizer passes would see a call freed twice or used after it ended), and every
// one answered OK is in the WAL.
TEST_F(SpoolServiceTest, SendsWhoseClientsGoAwayMidAppendEndCleanlyAndAnsweredOnesAreDurable) {
  Start();
  constexpr int kCalls = 200;
  struct Call {
    grpc::ClientContext ctx;
    kspool::v1::SendResponse resp;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  const kspool::v1::SendRequest req = OneMessage("v");
  std::atomic<int> answered{0};
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back(std::make_unique<Call>());
    Call* c = calls.back().get();
    c->ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    stub_->async()->Send(&c->ctx, &req, &c->resp, [c, &answered](grpc::Status s) {
      c->status = std::move(s);
      answered.fetch_add(1);
    });
    if (i % 2 == 1) c->ctx.TryCancel();  // some before their append, some during it
  }
  ASSERT_TRUE(kspool::testing::WaitUntil([&] { return answered.load() == kCalls; }, 10s));
  std::set<uint64_t> stored;
  for (const wal::Entry& e : Entries()) stored.insert(e.seq);
  int ok = 0;
  for (const auto& c : calls) {
    if (!c->status.ok()) {
      EXPECT_EQ(c->status.error_code(), grpc::StatusCode::CANCELLED) << c->status.error_message();
      continue;
    }
    ++ok;
    ASSERT_EQ(c->resp.sequence_size(), 1);
    EXPECT_EQ(stored.count(c->resp.sequence(0)), 1u) << "answered, so durable";
  }
  EXPECT_GE(ok, kCalls / 2) << "the Sends that were not cancelled are answered";
}
// WAIT_FOR_KAFKA through the service, with the drain's part played by the test: it
// settles outcomes into DeliveryWaiters as the drain loop would after a durable Settle.
class SpoolWaitTest : public SpoolServiceTest {
 protected:
  // Resolves every entry in the WAL that is not resolved yet as delivered to partition 0.
  size_t ResolveAll() {
    std::vector<wal::Outcome> outcomes;
    for (const wal::Entry& e : Entries()) {
      if (!resolved_.insert(e.seq).second) continue;
      outcomes.push_back(wal::Outcome::Delivered(e.seq, e.record.topic, 0,
                                                 static_cast<int64_t>(e.seq) + 1000));
    }
    waiters_.Resolve(outcomes);
    return outcomes.size();
  }
  std::set<uint64_t> resolved_;
};

TEST_F(SpoolWaitTest, WaitForKafkaAnswersWithEveryOutcomeInRequestOrder) {
  Start();
  kspool::v1::SendRequest req = OneMessage("a");
  *req.add_messages() = req.messages(0);
  req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  kspool::v1::SendResponse resp;
  grpc::Status status;
  std::thread client([&] { status = Send(req, &resp); });
  // A waiter is reserved before the append, so wait for the entries too.
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] { return waiters_.waiting() == 1 && Entries().size() == 2; }, 10s));
  EXPECT_EQ(ResolveAll(), 2u);
  client.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(resp.deliveries_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(resp.deliveries(i).sequence(), resp.sequence(i));
    EXPECT_EQ(resp.deliveries(i).state(), kspool::v1::DeliveryStatus::DELIVERED);
    EXPECT_EQ(resp.deliveries(i).offset(), static_cast<int64_t>(resp.sequence(i)) + 1000);
  }
}

TEST_F(SpoolWaitTest, AClientThatGoesAwayReleasesItsWaiter) {
  Start();
  kspool::v1::SendRequest req = OneMessage("a");
  req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  grpc::ClientContext ctx;
  kspool::v1::SendResponse resp;
  grpc::Status status;
  std::thread client([&] { status = stub_->Send(&ctx, req, &resp); });
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] { return waiters_.waiting() == 1 && Entries().size() == 1; }, 10s));
  ctx.TryCancel();
  client.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(kspool::testing::WaitUntil([&] { return waiters_.waiting() == 0; }, 10s));
  EXPECT_EQ(Entries().size(), 1u) << "the message stays durable";
}

TEST_F(SpoolWaitTest, AStreamWorksOnAtMostItsInflightBoundAndAnswersEveryRequest) {
  Start();
  constexpr size_t kRequests = 3 * SpoolService::kMaxStreamInflight;
  grpc::ClientContext ctx;
  auto stream = stub_->SendStream(&ctx);
  std::atomic<size_t> answered{0};
  std::atomic<bool> in_order{true};
  std::thread reader([&] {
    kspool::v1::SendResponse resp;
    uint64_t last = 0;
    while (stream->Read(&resp)) {
      if (resp.status().code() != 0 || resp.deliveries_size() != 1 || resp.sequence(0) <= last) {
        in_order = false;
      }
      last = resp.sequence(0);
      answered.fetch_add(1);
    }
  });
  kspool::v1::SendRequest req = OneMessage("s");
  req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  for (size_t i = 0; i < kRequests; ++i) ASSERT_TRUE(stream->Write(req));
  stream->WritesDone();
  size_t most_waiting = 0;
  while (answered.load() < kRequests) {
    ASSERT_TRUE(kspool::testing::WaitUntil(
        [&] {
          most_waiting = std::max(most_waiting, waiters_.waiting());
          return waiters_.waiting() > 0 || answered.load() == kRequests;
        },
        10s));
    ResolveAll();
  }
  EXPECT_TRUE(stream->Finish().ok());
  reader.join();
  EXPECT_TRUE(in_order.load());
  EXPECT_LE(most_waiting, SpoolService::kMaxStreamInflight);
  EXPECT_EQ(Entries().size(), kRequests);
}

}  // namespace
}  // namespace kspool::agent
