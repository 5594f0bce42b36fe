// A careless or hostile client over loopback: a real kspool-agent and kspool-devkafka,
// requests sent as raw bytes (grpc::GenericStub) so that they can be garbage, truncated
// or carry invalid UTF-8 in `string` fields. Each gets INVALID_ARGUMENT with a message,
// the agent's log does not grow with them, and the agent keeps serving.
#include <gtest/gtest.h>

#include <filesystem>

#include "kspool/v1/spool_wire.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/raw_call.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::RawUnaryCall;

constexpr char kSend[] = "/kspool.v1.Spool/Send";

class MalformedRequest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 1, std::vector<std::string>{"events:2"});
  }
  void StartAgent(std::vector<std::string> args = {}) {
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), log_path(), kafka_->bootstrap(),
                                            std::move(args));
    channel_ = grpc::CreateChannel(agent_->address(), grpc::InsecureChannelCredentials());
  }
  std::string log_path() const { return dir_.sub("agent.log"); }
  uintmax_t LogBytes() const { return std::filesystem::file_size(log_path()); }

  // A SendRequest whose message `bad` has a topic that is not UTF-8: a client whose own
  // types are bytes (or another language's lax encoder) can send it.
  static std::string InvalidUtf8Send(int bad) {
    kspool::v1::wire::SendRequest req;
    for (int i = 0; i <= bad; ++i) {
      auto* m = req.add_messages();
      m->set_topic(i == bad ? "ev\xc3\x28nts" : "events");
      m->set_value("v");
    }
    return req.SerializeAsString();
  }
  static kspool::v1::SendRequest ValidSend(const std::string& value) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic("events");
    m->set_value(value);
    return req;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
  std::shared_ptr<grpc::Channel> channel_;
};

const std::string kGarbage("\x0a\xff\xff\xff\xff\x0f\x01garbage", 14);

TEST_F(MalformedRequest, GarbageIsInvalidArgumentWithAMessage) {
  StartAgent();
  auto reply = RawUnaryCall(channel_, kSend, kGarbage);
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << reply.status.error_code() << " " << reply.status.error_message();
  EXPECT_EQ(reply.status.error_message(), "request is not a valid kspool.v1.SendRequest (14 bytes)");
}

TEST_F(MalformedRequest, InvalidUtf8IsInvalidArgumentNamingTheMessageAndField) {
  StartAgent();
  auto reply = RawUnaryCall(channel_, kSend, InvalidUtf8Send(3));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << reply.status.error_code() << " " << reply.status.error_message();
  EXPECT_EQ(reply.status.error_message(), "message 3: topic: not valid UTF-8");
}

TEST_F(MalformedRequest, FiveThousandBadRequestsAddAtMostAFewKilobytesOfLogAndTheAgentServesOn) {
  StartAgent();
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent_->Send(ValidSend("before"), &resp).ok());
  const uintmax_t before = LogBytes();
  const std::string utf8 = InvalidUtf8Send(0);
  int precise = 0;  // INVALID_ARGUMENT with a message
  for (int i = 0; i < 5000; ++i) {
    auto reply = RawUnaryCall(channel_, kSend, i % 2 ? kGarbage : utf8);
    precise += reply.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
               !reply.status.error_message().empty();
  }
  grpc::Status s = agent_->Send(ValidSend("after"), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  const uintmax_t grown = LogBytes() - before;
  EXPECT_LE(grown, 4096u) << "the agent's log grew by " << grown << " bytes";
  EXPECT_EQ(precise, 5000);
}

TEST_F(MalformedRequest, AForgedKspoolSeqHeaderIsRefusedAndOnlyTheAgentsReachesKafka) {
  StartAgent();
  kspool::v1::SendRequest forged = ValidSend("forged");
  auto* h = forged.mutable_messages(0)->add_headers();
  h->set_key("kspool.seq");
  h->set_value("1");
  kspool::v1::SendResponse resp;
  grpc::Status s = agent_->Send(forged, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "message 0: headers[0].key: \"kspool.seq\": headers starting with \"kspool.\" are "
            "reserved for the agent");

  kspool::v1::SendRequest good = ValidSend("good");
  auto* g = good.mutable_messages(0)->add_headers();
  g->set_key("trace");
  g->set_value("t1");
  ASSERT_TRUE(agent_->Send(good, &resp).ok());
  auto got = kspool::testing::ReadTopic(kafka_->bootstrap(), "events", 1, std::chrono::seconds(30));
  ASSERT_EQ(got.size(), 1u) << "the forged message must not have been written";
  EXPECT_EQ(got[0].value, "good");
  int seq_headers = 0;
  for (const auto& [k, v] : got[0].headers) seq_headers += k == "kspool.seq";
  EXPECT_EQ(seq_headers, 1);
  EXPECT_EQ(got[0].seq, resp.sequence(0));
}

TEST_F(MalformedRequest, ARequestOverTheMaxReceiveSizeIsResourceExhausted) {
  // --max-message-bytes 1024: gRPC takes requests up to 2 KiB + 64 MiB. The front door's
  // guard against one connection holding over a quarter of --max-receive-memory would
  // otherwise shut the connection down first when the machine is busy (the client has
  // pushed the whole request before gRPC reads its length); that guard has its own tests.
  StartAgent({"--max-message-bytes", "1024", "--max-receive-memory", "1GiB"});
  auto reply = RawUnaryCall(channel_, kSend, std::string((64 << 20) + 4096, 'x'),
                            std::chrono::seconds(30));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << reply.status.error_code() << " " << reply.status.error_message();
  EXPECT_NE(reply.status.error_message().find("larger than max"), std::string::npos)
      << reply.status.error_message();
  kspool::v1::SendResponse resp;
  grpc::Status st = agent_->Send(ValidSend("after"), &resp);
  EXPECT_TRUE(st.ok()) << st.error_code() << " " << st.error_message();
}

}  // namespace
}  // namespace kspool
