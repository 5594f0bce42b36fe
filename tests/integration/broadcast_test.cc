// Broadcast end to end: one message to every partition of the named topics, or of every
// topic the agent has seen except Kafka's internal ones (names starting with "__").
#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

class BroadcastE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(
        dir_.path(), 1, std::vector<std::string>{"events:4", "other:2", "__internal:3"});
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), dir_.sub("agent.log"),
                                            kafka_->bootstrap());
  }
  grpc::Status Broadcast(const std::vector<std::string>& topics,
                         kspool::v1::BroadcastResponse* resp) {
    kspool::v1::BroadcastRequest req;
    req.mutable_message()->set_value("hello");
    for (const std::string& t : topics) req.add_topics(t);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return agent_->spool().Broadcast(&ctx, req, resp);
  }
  static std::vector<std::string> TargetTopics(const kspool::v1::BroadcastResponse& resp) {
    std::vector<std::string> out;
    for (const auto& t : resp.targets()) {
      if (out.empty() || out.back() != t.topic()) out.push_back(t.topic());
    }
    return out;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(BroadcastE2E, DuplicateTopicsAreMergedInTheOrderFirstNamed) {
  std::vector<std::string> topics(1000, "events");
  topics.insert(topics.begin() + 1, "other");
  kspool::v1::BroadcastResponse resp;
  grpc::Status s = Broadcast(topics, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.targets_size(), 6) << "4 partitions of events + 2 of other, each once";
  EXPECT_EQ(TargetTopics(resp), (std::vector<std::string>{"events", "other"}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(resp.targets(i).partition(), i);
  for (int i = 1; i < resp.targets_size(); ++i) {
    EXPECT_EQ(resp.targets(i).sequence(), resp.targets(0).sequence() + i);
  }
}

TEST_F(BroadcastE2E, AllTopicsLeavesOutInternalTopics) {
  for (const char* topic : {"events", "__internal"}) {
    kspool::v1::SendRequest req;
    req.add_messages()->set_topic(topic);
    kspool::v1::SendResponse sent;
    ASSERT_TRUE(agent_->Send(req, &sent).ok()) << topic;
  }
  kspool::v1::BroadcastResponse resp;
  grpc::Status s = Broadcast({}, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(TargetTopics(resp), std::vector<std::string>{"events"});
  EXPECT_EQ(resp.targets_size(), 4);
  // Named, an internal topic is a target like any other.
  kspool::v1::BroadcastResponse named;
  ASSERT_TRUE(Broadcast({"__internal"}, &named).ok());
  EXPECT_EQ(named.targets_size(), 3);
}

TEST_F(BroadcastE2E, AReservedHeaderOnTheMessageIsRefused) {
  kspool::v1::BroadcastRequest req;
  auto* h = req.mutable_message()->add_headers();
  h->set_key("kspool.heartbeat");
  req.add_topics("events");
  kspool::v1::BroadcastResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Status s = agent_->spool().Broadcast(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("message: headers[0].key: \"kspool.heartbeat\"", 0), 0u)
      << s.error_message();
}

}  // namespace
}  // namespace kspool
