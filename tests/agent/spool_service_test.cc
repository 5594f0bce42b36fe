// SpoolService in process: a real WAL in a temp dir, real gRPC on a loopback port, an
// injected clock. Malformed requests, client timestamps and the receive memory budget.
#include "agent/spool_service.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "tests/support/raw_call.h"
#include "tests/support/temp_dir.h"
#include "wal/clock.h"

namespace kspool::agent {
namespace {

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
    service_ = std::make_unique<SpoolService>(
        wal_.get(), RequestLimits{}, [] {}, [](absl::StatusCode) { return int64_t{123}; },
        nullptr, nullptr, &clock_, receive_memory_bytes);
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
    EXPECT_TRUE(wal_->Scan(0, 100, 1 << 20, &out).ok());
    return out;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{kNow};
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

}  // namespace
}  // namespace kspool::agent
