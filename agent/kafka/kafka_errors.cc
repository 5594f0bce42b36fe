#include "agent/kafka/kafka_errors.h"

#include <cctype>

#include "agent/drain/discard_reasons.h"

namespace kspool::agent {

ErrorClass ClassifyDeliveryError(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
      return ErrorClass::kPermanent;
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
      return ErrorClass::kCheckTopic;
    default:
      // Leader changes, timeouts (broker or librdkafka's message.timeout.ms), network
      // errors, brokers down, purges, fatal idempotence errors: the message stays.
      return ErrorClass::kTransient;
  }
}

std::string DiscardReason(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return "msg_size_too_large";
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
      return "invalid_record";
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
      return "invalid_timestamp";
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
      return "topic_authorization_failed";
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
      return "invalid_topic";
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
      return "policy_violation";
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
      return kReasonUnknownTopic;
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
      return kReasonUnknownPartition;
    default: {
      std::string name = rd_kafka_err2name(err);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      while (!name.empty() && name[0] == '_') name.erase(0, 1);
      return name;
    }
  }
}

DeliveryReport ReportOfDelivery(rd_kafka_resp_err_t err) {
  DeliveryReport r;
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    r.result = DeliveryResult::kDelivered;
    return r;
  }
  r.error_name = rd_kafka_err2name(err);
  r.error = rd_kafka_err2str(err);
  if (err == RD_KAFKA_RESP_ERR__PURGE_QUEUE) {
    // Taken back before it was sent (PurgeQueued, or PurgeAll for a queued message).
    r.result = DeliveryResult::kPurged;
    return r;
  }
  switch (ClassifyDeliveryError(err)) {
    case ErrorClass::kPermanent:
      // The broker's size limits apply to the batch: the message may fit alone.
      r.result = err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
                         err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE
                     ? DeliveryResult::kTooLarge
                     : DeliveryResult::kDiscard;
      r.reason = DiscardReason(err);
      break;
    case ErrorClass::kCheckTopic:
      r.result = err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ? DeliveryResult::kUnknownPartition
                                                             : DeliveryResult::kUnknownTopic;
      break;
    case ErrorClass::kTransient:
      r.result = DeliveryResult::kRetry;
      break;
  }
  return r;
}

DeliveryReport ReportOfProduce(rd_kafka_resp_err_t err) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    DeliveryReport r;
    r.result = DeliveryResult::kQueued;
    return r;
  }
  if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
    DeliveryReport r;
    r.result = DeliveryResult::kQueueFull;
    r.error_name = rd_kafka_err2name(err);
    r.error = rd_kafka_err2str(err);
    return r;
  }
  DeliveryReport r = ReportOfDelivery(err);
  // Refused before any batch exists: the message alone exceeds the client's limit.
  if (r.result == DeliveryResult::kTooLarge) r.result = DeliveryResult::kDiscard;
  return r;
}

}  // namespace kspool::agent
