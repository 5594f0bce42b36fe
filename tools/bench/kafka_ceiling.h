// The Kafka client's ceiling beside RocksDB's (ceiling.h): librdkafka alone producing
// `size`-byte values to bench-0 from one thread as fast as it takes them, until every
// message is acknowledged. Two configurations:
//  * kKspool: the agent's own producer (agent/kafka/kafka_producer.h, KafkaProducer) with
//    its defaults: acks=all, idempotence, lz4, the headers kspool.agent and kspool.seq on
//    every record. The least the agent's drain can spend per message on Kafka.
//  * kPlain: librdkafka with the peer benchmark's omkafka settings (lz4, no idempotence,
//    no headers, linger 5 ms): what rsyslog's Kafka output spends per message at most.
// Thread safety: one call at a time.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kspool::bench {

enum class KafkaCeilingMode { kKspool, kPlain };

struct KafkaCeilingResult {
  double delivered_per_s = 0;  // acknowledged messages over the span
  double seconds = 0;          // from the first produce to the last acknowledgement
  uint64_t delivered = 0;
  // CPU (user + system, every thread of this process: librdkafka's broker threads
  // included) per acknowledged message over the same span.
  double cpu_us_per_message = 0;
};

// Produces for `seconds`, then waits (at most 60 s) for the outstanding acknowledgements.
absl::StatusOr<KafkaCeilingResult> MeasureKafkaCeiling(const std::string& brokers,
                                                       KafkaCeilingMode mode, int size,
                                                       double seconds);

}  // namespace kspool::bench
