// The producer's fixed properties under every name librdkafka gives them, and the size
// arithmetic of agent/validate/kafka_limits.h against librdkafka's own encoding. No broker is
// needed: librdkafka checks a message's size when it is produced, before any I/O.
#include <gtest/gtest.h>

#include "agent/validate/kafka_limits.h"
#include "agent/kafka/kafka_producer.h"
#include "agent/validate/request_validator.h"

namespace kspool::agent {
namespace {

absl::StatusOr<std::unique_ptr<KafkaProducer>> Producer(std::vector<std::string> options) {
  ProducerConfig pc;
  pc.brokers = "127.0.0.1:1";
  pc.options = std::move(options);
  pc.agent_id = "0123456789abcdef";  // ids are 16 hex digits
  return KafkaProducer::Create(pc);
}

TEST(KafkaOptions, ProducerRefusesAcksBelowAllUnderEitherName) {
  for (const std::string bad : {"acks=1", "acks=0", "request.required.acks=0",
                                "request.required.acks=1", "enable.idempotence=false"}) {
    auto p = Producer({bad});
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(p.status().message().find(bad + " is refused"), std::string::npos) << p.status();
  }
}

TEST(KafkaOptions, ProducerRefusesOptionsTheDrainReliesOn) {
  for (const std::string bad : {"delivery.report.only.error=true", "transactional.id=t",
                                "partitioner=consistent_random", "statistics.interval.ms=0"}) {
    auto p = Producer({bad});
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(p.status().message().find(bad + " is refused"), std::string::npos) << p.status();
  }
}

TEST(KafkaOptions, ProducerTakesAcksAllOrMinusOneUnderEitherName) {
  for (const std::string ok : {"acks=all", "acks=-1", "request.required.acks=-1",
                               "request.required.acks=all", "client.id=a,b"}) {
    auto p = Producer({ok});
    EXPECT_TRUE(p.ok()) << ok << ": " << p.status();
  }
}

// The largest message the default accepts, shaped for the most overhead (64 headers
// whose lengths take 3-byte varints, the longest sequence number), is accepted by
// librdkafka limited to 1,000,000 less the record batch header: so the batch holding
// it fits Kafka's 1,000,000. One more byte of value is refused by the validator.
TEST(KafkaLimits, LargestDefaultMessageFitsAMillionBytesBatchInLibrdkafkasEncoding) {
  wal::Entry e;
  e.seq = UINT64_MAX;  // 20 decimal digits in kspool.seq
  wal::Record& r = e.record;
  r.topic = "t";
  r.key = std::string(8192, 'k');
  uint64_t size = r.key->size();
  for (uint64_t h = 0; h < kHeadersBudgeted; ++h) {
    const size_t n = h < 59 ? 8192 : 1;  // as many 3-byte length varints as fit
    r.headers.push_back(wal::Header{std::string(n, 'h'), std::string(n, 'v')});
    size += 2 * n;
  }
  ASSERT_LT(size, kDefaultMaxMessageBytes);
  r.value = std::string(kDefaultMaxMessageBytes - size, 'x');
  r.receive_time_ms = 1;

  auto p = Producer({"message.max.bytes=" + std::to_string(1'000'000 - kKafkaBatchHeaderBytes)});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Produce(e, 0).result, DeliveryResult::kQueued);
  // Control: librdkafka does refuse what does not fit.
  r.value.push_back('x');
  r.value.append(kKafkaMessageOverheadBytes, 'x');
  DeliveryReport refused = (*p)->Produce(e, 0);
  EXPECT_EQ(refused.result, DeliveryResult::kDiscard);
  EXPECT_EQ(refused.error_name, rd_kafka_err2name(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE));
  EXPECT_EQ(refused.reason, "msg_size_too_large");
  (*p)->PurgeAll();

  kspool::v1::wire::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("t");
  m->set_key(*r.key);
  for (const wal::Header& h : r.headers) {
    auto* mh = m->add_headers();
    mh->set_key(h.key);
    mh->set_value(h.value);
  }
  m->set_value(std::string(kDefaultMaxMessageBytes - size, 'x'));
  const RequestLimits limits{kDefaultMaxMessageBytes, 10000};
  EXPECT_TRUE(ValidateSendRequest(req, limits, 0).ok());
  m->mutable_value()->push_back('x');
  EXPECT_EQ(ValidateSendRequest(req, limits, 0).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kspool::agent
