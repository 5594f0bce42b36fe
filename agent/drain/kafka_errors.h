// How the spool treats each Kafka delivery error (ARCHITECTURE.md invariant 5): transient
// errors never discard; permanent ones discard into the dead letters with a reason;
// "unknown topic/partition" is permanent only once fresh metadata confirms it.
// Thread safety: pure functions.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>

namespace kspool::agent {

enum class ErrorClass {
  kTransient,   // produce again after a backoff
  kPermanent,   // discard with DiscardReason()
  kCheckTopic,  // ask the cluster whether the topic / partition exists
};

ErrorClass ClassifyDeliveryError(rd_kafka_resp_err_t err);
// Stable, lower-case reason label for a permanent error (used in metrics, the
// dead-letter store and reports), e.g. "msg_size_too_large".
std::string DiscardReason(rd_kafka_resp_err_t err);

inline constexpr char kReasonUnknownTopic[] = "unknown_topic";
inline constexpr char kReasonUnknownPartition[] = "unknown_partition";
inline constexpr char kReasonExpired[] = "expired";
inline constexpr char kReasonCorrupt[] = "corrupt";

}  // namespace kspool::agent
