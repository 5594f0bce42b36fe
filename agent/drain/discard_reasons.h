// The dead-letter reasons the drain decides itself (a permanent Kafka error's reason
// comes with its DeliveryReport, producer.h). Stable, lower-case labels: they name
// the discards in metrics, the dead-letter store and reports.
// Thread safety: constants.
#pragma once

namespace kspool::agent {

// The cluster confirmed (`unknown_topic_checks` fresh metadata answers) that the topic,
// or the entry's explicit partition, does not exist.
inline constexpr char kReasonUnknownTopic[] = "unknown_topic";
inline constexpr char kReasonUnknownPartition[] = "unknown_partition";
// Older than --max-message-age.
inline constexpr char kReasonExpired[] = "expired";
// The WAL entry does not decode.
inline constexpr char kReasonCorrupt[] = "corrupt";

}  // namespace kspool::agent
