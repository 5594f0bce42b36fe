// Client timestamps end to end: what a client sets is the Kafka record's timestamp, with
// one exception that librdkafka makes (below).
#include <gtest/gtest.h>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

class Timestamps : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 1, std::vector<std::string>{"events:1"});
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), dir_.sub("agent.log"),
                                            kafka_->bootstrap());
  }
  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

// librdkafka (rd_kafka_msg_new0, up to at least 2.x) replaces a timestamp of 0 with the
// time of the produce call, and has no way to send 0: an explicit 0, kept as 0 in the WAL
// (SpoolServiceTest.AnExplicitZeroTimestampIsStoredAsZeroAndAnAbsentOneAsAbsent), reaches
// Kafka as the send time. This pins that documented behaviour, so that a librdkafka that
// changes it is noticed.
TEST_F(Timestamps, ExplicitTimestampsReachKafkaExactlyButZeroBecomesTheSendTime) {
  kspool::v1::SendRequest req;
  for (int64_t ts : {int64_t{0}, int64_t{1}, int64_t{1'600'000'000'000}}) {
    auto* m = req.add_messages();
    m->set_topic("events");
    m->set_value(std::to_string(ts));
    m->set_timestamp_ms(ts);
  }
  kspool::v1::SendResponse resp;
  grpc::Status s = agent_->Send(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto got = kspool::testing::ReadTopic(kafka_->bootstrap(), "events", 3, std::chrono::seconds(30));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].value, "0");
  EXPECT_GE(got[0].timestamp_ms, resp.receive_time_ms()) << "librdkafka's send time";
  EXPECT_EQ(got[1].timestamp_ms, 1);
  EXPECT_EQ(got[2].timestamp_ms, 1'600'000'000'000);
}

TEST_F(Timestamps, OutOfRangeTimestampsAreRefusedNamingTheMessage) {
  for (int64_t ts : {INT64_MIN, int64_t{-1}, INT64_MAX, int64_t{32'503'680'000'000}}) {
    kspool::v1::SendRequest req;
    req.add_messages()->set_topic("events");
    auto* m = req.add_messages();
    m->set_topic("events");
    m->set_timestamp_ms(ts);
    kspool::v1::SendResponse resp;
    grpc::Status s = agent_->Send(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << ts;
    EXPECT_EQ(s.error_message().rfind("message 1: timestamp_ms: " + std::to_string(ts), 0), 0u)
        << s.error_message();
  }
  EXPECT_EQ(agent_->WalStats().entries(), 0u);
}

}  // namespace
}  // namespace kspool
