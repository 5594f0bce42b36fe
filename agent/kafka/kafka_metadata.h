// KafkaMetadata: asks the cluster for fresh topic metadata (partition counts), for
// heartbeats and broadcasts. Its own librdkafka handle, separate from the drain loop's
// producer, so a slow metadata request never stalls delivery.
// Thread safety: every method may be called from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kafka/kafka_secrets.h"
#include "base/mutex.h"

namespace kspool::agent {

// One fresh metadata request for `rkt` (named `topic`) on handle `rk`: per partition id,
// whether it has a leader; NOT_FOUND if the cluster says the topic does not exist, else
// UNAVAILABLE.
absl::StatusOr<std::vector<bool>> FreshPartitionLeaders(rd_kafka_t* rk, rd_kafka_topic_t* rkt,
                                                        const std::string& topic, int timeout_ms);

class KafkaMetadata {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KafkaMetadata>> Create(
      const std::string& brokers, const std::vector<std::string>& options);
  ~KafkaMetadata();

  // Partitions of `topic` from a fresh metadata request. NOT_FOUND if the cluster says
  // it does not exist; UNAVAILABLE if the cluster could not be asked in time.
  absl::StatusOr<int> PartitionCount(const std::string& topic, int timeout_ms);
  // The same request: per partition id, whether it has a leader.
  absl::StatusOr<std::vector<bool>> PartitionLeaders(const std::string& topic, int timeout_ms);
  // At shutdown: requests waiting for the cluster give up within kSliceMs, later ones at
  // once (UNAVAILABLE), so that no thread waits out a 5 s timeout on an unreachable
  // cluster while the agent stops.
  void Cancel() { cancelled_.store(true); }
  // librdkafka's metadata call cannot be interrupted: a request is made of calls of at
  // most this long, each a fresh request, and Cancel() is seen between them.
  static constexpr int kSliceMs = 1000;

 private:
  KafkaMetadata() = default;
  SecretScrubber scrubber_;  // librdkafka's log callback reads it; set before the handle
  rd_kafka_t* rk_ = nullptr;
  Mutex mu_;  // serializes topic-handle creation
  std::atomic<bool> cancelled_{false};
};

}  // namespace kspool::agent
