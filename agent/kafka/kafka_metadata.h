// KafkaMetadata: asks the cluster for fresh topic metadata (partition counts), for
// heartbeats and broadcasts. Its own librdkafka handle, separate from the drain loop's
// producer, so a slow metadata request never stalls delivery.
// Thread safety: every method may be called from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <memory>
#include <string>
#include <unordered_set>
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
  // Past `max_topics` topic names asked about (0: no limit), the next request gets a new
  // librdkafka handle, and the old one, which keeps every name it was given, goes once
  // the requests using it return.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KafkaMetadata>> Create(
      const std::string& brokers, const std::vector<std::string>& options, size_t max_topics = 0);
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
  // librdkafka handles made after the first (any thread).
  uint64_t handles_replaced() const { return handles_made_.load(); }

 private:
  KafkaMetadata() = default;
  absl::StatusOr<std::shared_ptr<rd_kafka_t>> MakeHandle();
  // The handle to ask about `topic` with, counting the name.
  std::shared_ptr<rd_kafka_t> HandleFor(const std::string& topic);

  std::string brokers_;
  std::vector<std::string> options_;
  size_t max_topics_ = 0;
  SecretScrubber scrubber_;  // librdkafka's log callback reads it; set before any handle
  Mutex mu_;
  std::shared_ptr<rd_kafka_t> rk_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<std::string> names_ ABSL_GUARDED_BY(mu_);  // asked on rk_ (with a max)
  std::atomic<uint64_t> handles_made_{0};
  std::atomic<bool> cancelled_{false};
};

}  // namespace kspool::agent
