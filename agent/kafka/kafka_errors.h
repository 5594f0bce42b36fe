// How the spool treats each librdkafka error, told to the drain in its own terms
// (DeliveryReport, agent/drain/producer.h): transient errors never discard; permanent
// ones discard into the dead letters with a stable reason; "unknown topic/partition"
// is permanent only once fresh metadata confirms it, which the drain asks for.
// Thread safety: pure functions.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>

#include "agent/drain/producer.h"

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

// The drain's report of a delivery report's error code (RD_KAFKA_RESP_ERR_NO_ERROR:
// kDelivered), with the client's error name and text and, for kDiscard and kTooLarge
// (a batch the broker found too large), the reason (the drain names unknown topics and
// partitions itself); seq, partition and offset unset.
DeliveryReport ReportOfDelivery(rd_kafka_resp_err_t err);
// The drain's report of what rd_kafka_producev() returned: kQueued when accepted,
// kQueueFull for a full local queue, else the entry's report, as ReportOfDelivery(),
// except that a message too large is kDiscard (the client measured it alone).
DeliveryReport ReportOfProduce(rd_kafka_resp_err_t err);

}  // namespace kspool::agent
