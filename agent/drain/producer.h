// Producer: what the drain loop needs from a Kafka producer, as an interface (the seam
// LevelDB's Env is for files), so that the drain's hardest cases run as unit tests
// against a scripted fake. KafkaProducer (agent/kafka/kafka_producer.h) is the real one.
// Outcomes are told in the drain's terms (DeliveryResult): the producer classifies its
// client's errors (transient errors never discard; permanent ones discard with a stable
// reason; an unknown topic or partition is for the drain to confirm with metadata).
// Thread safety: one thread (the drain loop) uses an instance; delivery reports are
// handed out only by Poll().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "wal/entry.h"

namespace kspool::agent {

// Produce() with this partition lets the producer choose (murmur2 of the key, as the
// Java client; any partition without a key).
inline constexpr int32_t kAnyPartition = -1;
// For PurgeQueued: every message of the topic the client still queues, wherever it put
// it (the drain may not know the partitions the client chose).
inline constexpr int32_t kEveryPartition = -3;

// What happened to a message handed to the producer.
enum class DeliveryResult {
  // Produce() only: accepted; its report comes from a later Poll().
  kQueued,
  // Produce() only: the client's local queue is full; nothing was done. Produce it
  // again after the next Poll().
  kQueueFull,
  // In Kafka, at `partition` and `offset`.
  kDelivered,
  // A transient error (leader change, timeout, broker down...): produce it again after
  // a backoff. Never a reason to discard.
  kRetry,
  // A permanent error: discard it into the dead letters with `reason`.
  kDiscard,
  // The cluster may not have the topic, or the partition: the drain asks fresh metadata
  // and discards (unknown_topic / unknown_partition) only once it confirms; else retry.
  kUnknownTopic,
  kUnknownPartition,
  // Taken back from the client before it was sent (PurgeQueued, PurgeAll).
  kPurged,
  // The broker refused the batch it travelled in as too large (MSG_SIZE_TOO_LARGE,
  // RECORD_LIST_TOO_LARGE): the drain produces it again alone, and discards it with
  // `reason` only when it fails alone too. (A message the client finds too large by
  // itself at Produce() is kDiscard.)
  kTooLarge,
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  bool operator<(const TopicPartition& o) const {
    return topic != o.topic ? topic < o.topic : partition < o.partition;
  }
};

struct DeliveryReport {
  uint64_t seq = 0;
  DeliveryResult result = DeliveryResult::kRetry;  // as a default, never loses a message
  // kDiscard: the stable, lower-case reason (metrics, dead letters, reports), e.g.
  // "msg_size_too_large".
  std::string reason;
  // Unless delivered or queued: the client's name of the error (the label of the
  // produce-error metric, e.g. "REQUEST_TIMED_OUT") and its text (logs, dead letters).
  std::string error_name;
  std::string error;
  int32_t partition = -1;
  int64_t offset = -1;
  // Not delivered, yet an attempt may be in Kafka (librdkafka's POSSIBLY_PERSISTED: a
  // timeout or a purge of a message on the wire): the drain reconciles the entry with
  // Kafka before it produces it again.
  bool possibly_persisted = false;
};

class Producer {
 public:
  virtual ~Producer() = default;

  // Enqueues one decoded WAL entry for `partition` (or kAnyPartition). kQueued when
  // accepted: its report comes from Poll(). Any other result is the entry's report
  // (seq set), and no other is coming. The caller keeps the entry alive until its report.
  virtual DeliveryReport Produce(const wal::Entry& entry, int32_t partition) = 0;
  // Serves delivery reports for up to timeout_ms, appending them to *out.
  virtual void Poll(int timeout_ms, std::vector<DeliveryReport>* out) = 0;
  // Messages produced and not yet reported.
  virtual int OutstandingMessages() const = 0;
  // Takes back the messages still queued in the client (not those on the wire) for
  // these partitions: they are reported kPurged by the next Poll(). Other partitions'
  // messages stay queued, in order. Used to take back messages waiting for a partition
  // that has no leader. A partition of kEveryPartition names all of its topic's.
  virtual void PurgeQueued(const std::vector<TopicPartition>& partitions) = 0;
  // The same for every message, also those in flight. At shutdown and after a fatal error.
  virtual void PurgeAll() = 0;
  // Non-empty once the producer hit a fatal (idempotence) error: it must be replaced.
  virtual std::string FatalError() const = 0;
  // Topic names produced to since the producer was made (the client keeps each).
  virtual size_t KnownTopics() const { return 0; }
  // Brokers the client holds a connection to; 0 until it knows.
  virtual int BrokersUp() const = 0;
  // True once the client has said (in its statistics) that it holds no broker connection:
  // nothing produced can be acknowledged until one comes back.
  virtual bool NoBrokerUp() const { return false; }
};

}  // namespace kspool::agent
