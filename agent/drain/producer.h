// Producer: what the drain loop needs from a Kafka producer, as an interface (the seam
// LevelDB's Env is for files), so that the drain's hardest cases run as unit tests
// against a scripted fake. KafkaProducer (kafka_producer.h) is the real one.
// Thread safety: one thread (the drain loop) uses an instance; delivery reports are
// handed out only by Poll().
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <string>
#include <vector>

#include "wal/entry.h"

namespace kspool::agent {

// Produce() with this partition lets the producer choose (murmur2 of the key, as the
// Java client; any partition without a key).
inline constexpr int32_t kAnyPartition = -1;

struct DeliveryReport {
  uint64_t seq = 0;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string error;  // the client's text, when err is set
  int32_t partition = -1;
  int64_t offset = -1;
};

class Producer {
 public:
  virtual ~Producer() = default;

  // Enqueues one decoded WAL entry for `partition` (or kAnyPartition). Returns the
  // local error, e.g. RD_KAFKA_RESP_ERR__QUEUE_FULL; the entry then has no report
  // coming. The caller keeps the entry alive until its report.
  virtual rd_kafka_resp_err_t Produce(const wal::Entry& entry, int32_t partition) = 0;
  // Serves delivery reports for up to timeout_ms, appending them to *out.
  virtual void Poll(int timeout_ms, std::vector<DeliveryReport>* out) = 0;
  // Messages produced and not yet reported.
  virtual int OutstandingMessages() const = 0;
  // Fails the messages still queued in the client (not those on the wire) with
  // RD_KAFKA_RESP_ERR__PURGE_QUEUE; their reports come with the next Poll(). Used to
  // take back messages waiting for a partition that has no leader.
  virtual void PurgeQueued() = 0;
  // The same for every message, also those in flight. At shutdown and after a fatal error.
  virtual void PurgeAll() = 0;
  // Non-empty once the producer hit a fatal (idempotence) error: it must be replaced.
  virtual std::string FatalError() const = 0;
  // Brokers the client holds a connection to; 0 until it knows.
  virtual int BrokersUp() const = 0;
  // True once the client has said (in its statistics) that it holds no broker connection:
  // nothing produced can be acknowledged until one comes back.
  virtual bool NoBrokerUp() const { return false; }
};

}  // namespace kspool::agent
