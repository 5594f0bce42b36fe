// Delivery confirmation end to end: a kspool-agent process, a kspool-devkafka cluster,
// gRPC over loopback, and librdkafka's consumer checking that the partition and offset
// the agent reports hold exactly that message.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ConsumedRecord;
using kspool::testing::DevKafka;
using kspool::testing::ReadTopic;
using kspool::testing::WaitUntil;
using kspool::v1::DeliveryStatus;
using namespace std::chrono_literals;

class Delivery : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 3, std::vector<std::string>{"events:4"});
    StartAgent();
  }
  void StartAgent(std::vector<std::string> args = {}) {
    args.insert(args.end(), {"--unknown-topic-checks", "1", "--kafka-option",
                             "reconnect.backoff.max.ms=200"});
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), dir_.sub("agent.log"),
                                            kafka_->bootstrap(), args);
  }
  static kspool::v1::SendRequest Request(const std::string& topic, const std::string& prefix,
                                         int n, kspool::v1::WaitFor wait_for) {
    kspool::v1::SendRequest req;
    req.set_wait_for(wait_for);
    for (int i = 0; i < n; ++i) {
      auto* m = req.add_messages();
      m->set_topic(topic);
      m->set_value(prefix + std::to_string(i));
      if (i % 3 == 0) m->set_key("k" + std::to_string(i));
    }
    return req;
  }
  std::vector<DeliveryStatus> Statuses(uint64_t first, uint64_t last) {
    kspool::v1::GetDeliveryStatusRequest req;
    for (uint64_t s = first; s <= last; ++s) req.add_sequences(s);
    kspool::v1::GetDeliveryStatusResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    grpc::Status st = agent_->spool().GetDeliveryStatus(&ctx, req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return {resp.statuses().begin(), resp.statuses().end()};
  }
  // What a consumer finds at each (partition, offset) of `topic`.
  std::map<std::pair<int32_t, int64_t>, ConsumedRecord> Consumed(const std::string& topic,
                                                                 size_t n) {
    std::map<std::pair<int32_t, int64_t>, ConsumedRecord> at;
    for (ConsumedRecord& r : ReadTopic(kafka_->bootstrap(), topic, n, 30s)) {
      at[{r.partition, r.offset}] = std::move(r);
    }
    return at;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(Delivery, WaitForKafkaReturnsThePartitionAndOffsetAConsumerReads) {
  std::map<uint64_t, std::pair<std::string, DeliveryStatus>> sent;  // seq -> value, status
  for (int batch = 0; batch < 5; ++batch) {
    kspool::v1::SendRequest req =
        Request("events", "b" + std::to_string(batch) + "-", 40, kspool::v1::WAIT_FOR_KAFKA);
    kspool::v1::SendResponse resp;
    grpc::Status s = agent_->Send(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.deliveries_size(), 40);
    for (int i = 0; i < 40; ++i) {
      const DeliveryStatus& d = resp.deliveries(i);
      EXPECT_EQ(d.sequence(), resp.sequence(i)) << "deliveries come in request order";
      EXPECT_EQ(d.state(), DeliveryStatus::DELIVERED);
      EXPECT_EQ(d.topic(), "events");
      EXPECT_GT(d.delivered_time_ms(), 0);
      sent[d.sequence()] = {req.messages(i).value(), d};
    }
  }
  auto at = Consumed("events", sent.size());
  for (const auto& [seq, vs] : sent) {
    const DeliveryStatus& d = vs.second;
    auto it = at.find({d.partition(), d.offset()});
    ASSERT_NE(it, at.end()) << "seq " << seq << ": nothing at " << d.partition() << "/" << d.offset();
    EXPECT_EQ(it->second.value, vs.first);
    EXPECT_EQ(it->second.seq, seq);
  }
}

TEST_F(Delivery, StatusIsPendingWhileBrokersAreDownAndDeliveredWithTheSameOffsetsAfter) {
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent_->Send(Request("events", "p", 12, kspool::v1::WAIT_FOR_WAL), &resp).ok());
  const uint64_t first = resp.sequence(0), last = resp.sequence(11);
  for (const DeliveryStatus& d : Statuses(first, last)) {
    EXPECT_EQ(d.state(), DeliveryStatus::PENDING) << d.sequence();
  }
  ASSERT_EQ(kafka_->Command("broker up all"), "OK");
  std::vector<DeliveryStatus> got;
  ASSERT_TRUE(WaitUntil(
      [&] {
        got = Statuses(first, last);
        return std::all_of(got.begin(), got.end(), [](const DeliveryStatus& d) {
          return d.state() == DeliveryStatus::DELIVERED;
        });
      },
      30s));
  auto at = Consumed("events", 12);
  for (const DeliveryStatus& d : got) {
    auto it = at.find({d.partition(), d.offset()});
    ASSERT_NE(it, at.end());
    EXPECT_EQ(it->second.seq, d.sequence());
  }
}

TEST_F(Delivery, UnknownTopicIsDiscardedWithItsReason) {
  ASSERT_EQ(kafka_->Command("topic error ghost UNKNOWN_TOPIC_OR_PART"), "OK");
  kspool::v1::SendResponse resp;
  grpc::Status s = agent_->Send(Request("ghost", "g", 2, kspool::v1::WAIT_FOR_KAFKA), &resp, 60000);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.deliveries_size(), 2);
  for (const DeliveryStatus& d : resp.deliveries()) {
    EXPECT_EQ(d.state(), DeliveryStatus::DISCARDED);
    EXPECT_EQ(d.discard_reason(), "unknown_topic");
    EXPECT_NE(d.error().find("does not exist"), std::string::npos) << d.error();
    EXPECT_EQ(d.offset(), -1);
  }
  std::vector<DeliveryStatus> later = Statuses(resp.sequence(0), resp.sequence(1));
  EXPECT_EQ(later[0].state(), DeliveryStatus::DISCARDED);
  EXPECT_EQ(later[0].discard_reason(), "unknown_topic");
}

TEST_F(Delivery, AnUnassignedSequenceIsUnknownAndSaysWhy) {
  std::vector<DeliveryStatus> got = Statuses(1'000'000'000, 1'000'000'000);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].state(), DeliveryStatus::STATE_UNKNOWN);
  EXPECT_NE(got[0].error().find("not assigned"), std::string::npos) << got[0].error();
}

TEST_F(Delivery, WaitForKafkaPastItsDeadlineNamesTheDurableSequences) {
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  kspool::v1::SendRequest req = Request("events", "d", 5, kspool::v1::WAIT_FOR_KAFKA);
  kspool::v1::SendResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 1500ms);
  grpc::Status s = agent_->spool().Send(&ctx, req, &resp);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  auto md = ctx.GetServerTrailingMetadata().find("kspool-sequences");
  ASSERT_NE(md, ctx.GetServerTrailingMetadata().end())
      << "the agent answers before the client's deadline, naming the sequences";
  const std::string range(md->second.data(), md->second.size());
  const size_t dots = range.find("..");
  ASSERT_NE(dots, std::string::npos) << range;
  const uint64_t first = std::stoull(range.substr(0, dots));
  const uint64_t last = std::stoull(range.substr(dots + 2));
  EXPECT_EQ(last - first, 4u);
  ASSERT_EQ(kafka_->Command("broker up all"), "OK");
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::vector<DeliveryStatus> got = Statuses(first, last);
        return std::all_of(got.begin(), got.end(), [](const DeliveryStatus& d) {
          return d.state() == DeliveryStatus::DELIVERED;
        });
      },
      30s))
      << "the messages stayed durable and were delivered";
}

}  // namespace
}  // namespace kspool
