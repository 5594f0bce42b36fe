// kafka_errors: librdkafka's error codes told in the drain's terms (DeliveryReport), and
// the drain's own murmur2 partitioning checked against librdkafka's.
#include "agent/kafka/kafka_errors.h"

#include <gtest/gtest.h>

#include <string>

#include "agent/drain/drain_lanes.h"

namespace kspool::agent {
namespace {

TEST(KafkaErrors, DeliveredCarriesNoError) {
  DeliveryReport r = ReportOfDelivery(RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_EQ(r.result, DeliveryResult::kDelivered);
  EXPECT_EQ(r.error_name, "");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.reason, "");
}

TEST(KafkaErrors, PermanentErrorsDiscardWithAStableReason) {
  const std::pair<rd_kafka_resp_err_t, const char*> cases[] = {
      {RD_KAFKA_RESP_ERR_INVALID_RECORD, "invalid_record"},
      {RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP, "invalid_timestamp"},
      {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "topic_authorization_failed"},
      {RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, "invalid_topic"},
      {RD_KAFKA_RESP_ERR_POLICY_VIOLATION, "policy_violation"},
  };
  for (const auto& [err, reason] : cases) {
    EXPECT_EQ(ClassifyDeliveryError(err), ErrorClass::kPermanent) << reason;
    DeliveryReport r = ReportOfDelivery(err);
    EXPECT_EQ(r.result, DeliveryResult::kDiscard) << reason;
    EXPECT_EQ(r.reason, reason);
    EXPECT_EQ(r.error_name, rd_kafka_err2name(err));  // the produce-error metric's label
    EXPECT_EQ(r.error, rd_kafka_err2str(err));
    EXPECT_EQ(ReportOfProduce(err).result, DeliveryResult::kDiscard) << reason;
  }
}

// The broker's size limits apply to a batch: its messages are tried again alone, and
// only one too large by itself (as the client finds at produce time) is discarded.
TEST(KafkaErrors, BatchTooLargeIsTriedAgainAloneAndAMessageTooLargeAloneDiscards) {
  for (rd_kafka_resp_err_t err :
       {RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE}) {
    EXPECT_EQ(ClassifyDeliveryError(err), ErrorClass::kPermanent) << rd_kafka_err2name(err);
    DeliveryReport r = ReportOfDelivery(err);
    EXPECT_EQ(r.result, DeliveryResult::kTooLarge) << rd_kafka_err2name(err);
    EXPECT_EQ(r.reason, "msg_size_too_large");
    EXPECT_EQ(r.error_name, rd_kafka_err2name(err));  // the produce-error metric's label
    EXPECT_EQ(r.error, rd_kafka_err2str(err));
    EXPECT_EQ(ReportOfProduce(err).result, DeliveryResult::kDiscard) << rd_kafka_err2name(err);
    EXPECT_EQ(ReportOfProduce(err).reason, "msg_size_too_large");
  }
}

TEST(KafkaErrors, UnknownTopicOrPartitionIsForTheDrainToConfirm) {
  EXPECT_EQ(ReportOfDelivery(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC).result,
            DeliveryResult::kUnknownTopic);
  EXPECT_EQ(ReportOfDelivery(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART).result,
            DeliveryResult::kUnknownTopic);
  EXPECT_EQ(ReportOfDelivery(RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION).result,
            DeliveryResult::kUnknownPartition);
  EXPECT_EQ(ReportOfProduce(RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION).result,
            DeliveryResult::kUnknownPartition);
  EXPECT_EQ(ReportOfDelivery(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC).error_name, "_UNKNOWN_TOPIC");
  EXPECT_EQ(DiscardReason(RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC), "unknown_topic");
  EXPECT_EQ(DiscardReason(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART), "unknown_topic");
  EXPECT_EQ(DiscardReason(RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION), "unknown_partition");
}

TEST(KafkaErrors, TransientErrorsRetryAndNeverDiscard) {
  for (rd_kafka_resp_err_t err :
       {RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR__TRANSPORT,
        RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__FATAL,
        RD_KAFKA_RESP_ERR__QUEUE_FULL}) {
    EXPECT_EQ(ClassifyDeliveryError(err), ErrorClass::kTransient) << rd_kafka_err2name(err);
    DeliveryReport r = ReportOfDelivery(err);
    EXPECT_EQ(r.result, DeliveryResult::kRetry) << rd_kafka_err2name(err);
    EXPECT_EQ(r.reason, "");
    EXPECT_EQ(r.error_name, rd_kafka_err2name(err));
    EXPECT_EQ(r.error, rd_kafka_err2str(err));
  }
  EXPECT_EQ(ReportOfDelivery(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT).error_name, "_MSG_TIMED_OUT");
  // A reason for any code: the name, lower case, without librdkafka's leading '_'.
  EXPECT_EQ(DiscardReason(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT), "msg_timed_out");
}

TEST(KafkaErrors, PurgedMessagesAreTakenBack) {
  DeliveryReport r = ReportOfDelivery(RD_KAFKA_RESP_ERR__PURGE_QUEUE);
  EXPECT_EQ(r.result, DeliveryResult::kPurged);
  EXPECT_EQ(r.error_name, "_PURGE_QUEUE");
}

TEST(KafkaErrors, ProduceIsQueuedOrQueueFullOrTheEntrysReport) {
  EXPECT_EQ(ReportOfProduce(RD_KAFKA_RESP_ERR_NO_ERROR).result, DeliveryResult::kQueued);
  DeliveryReport full = ReportOfProduce(RD_KAFKA_RESP_ERR__QUEUE_FULL);
  EXPECT_EQ(full.result, DeliveryResult::kQueueFull);
  EXPECT_EQ(full.error_name, "_QUEUE_FULL");
  EXPECT_EQ(ReportOfProduce(RD_KAFKA_RESP_ERR__FATAL).result, DeliveryResult::kRetry);
}

TEST(KafkaErrors, DrainKeyPartitionIsLibrdkafkasMurmur2) {
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  for (int n : {1, 2, 3, 7, 12, 100, 1000, 65535}) {
    for (int i = 0; i < 500; ++i) {
      const std::string key =
          i < 256 ? binary.substr(0, static_cast<size_t>(i)) : "key-" + std::to_string(i);
      EXPECT_EQ(KeyPartition(key, n), rd_kafka_msg_partitioner_murmur2(
                                          nullptr, key.data(), key.size(), n, nullptr, nullptr))
          << "key #" << i << ", " << n << " partitions";
    }
  }
}

}  // namespace
}  // namespace kspool::agent
