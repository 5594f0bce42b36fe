// KafkaProducer: the Producer on librdkafka, configured for the spool: acks=all,
// idempotence on, murmur2 partitioning for keyed messages (as the Java client), and
// the headers kspool.agent and kspool.seq on every record. Produce() does not copy the
// payload: the caller keeps the entry alive until its delivery report. Its client's
// errors are told in the drain's terms (kafka_errors.h).
// Thread safety: one thread (the drain loop) uses an instance; reports are delivered
// only inside Poll() and Flush(), on that thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kafka/kafka_secrets.h"
#include "agent/drain/producer.h"
#include "wal/entry.h"

namespace kspool::agent {

struct ProducerConfig {
  std::string brokers;
  std::vector<std::string> options;  // KEY=VALUE, applied after kspool's defaults
  std::string agent_id;
  // With a maximum message age, librdkafka gives up on a message no later than that, so
  // an expired entry comes back to the drain loop to be discarded.
  uint64_t max_message_age_ms = 0;
  // Called (from librdkafka's threads) when delivery reports are ready, so the drain
  // loop can wait on its own monotonic clock instead of inside librdkafka, whose timed
  // waits follow the wall clock. Must be cheap and thread-safe.
  std::function<void()> on_reports;
};

class KafkaProducer final : public Producer {
 public:
  // INVALID_ARGUMENT names a bad or unknown librdkafka property. Properties that would
  // break the delivery guarantee (acks, enable.idempotence) cannot be overridden.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<KafkaProducer>> Create(
      const ProducerConfig& config);
  // What Create() would say of `options` (unknown property, bad value, SASL mechanism or
  // TLS file librdkafka refuses), checked at start by making a handle with no brokers
  // and no logging. Errors never hold a secret value (agent/kafka/kafka_secrets.h).
  [[nodiscard]] static absl::Status CheckOptions(const std::vector<std::string>& options);
  ~KafkaProducer() override;

  DeliveryReport Produce(const wal::Entry& entry, int32_t partition) override;
  void Poll(int timeout_ms, std::vector<DeliveryReport>* out) override;
  int OutstandingMessages() const override;
  // librdkafka takes back every partition's queued messages at once: the others'
  // are produced again at once, in their order, before anything else can be produced.
  void PurgeQueued(const std::vector<TopicPartition>& partitions) override;
  void PurgeAll() override;
  std::string FatalError() const override;
  // Brokers with a connection in state UP, from librdkafka's statistics (every second);
  // -1 until the first statistics arrive.
  size_t KnownTopics() const override { return topics_.size(); }
  int BrokersUp() const override { return brokers_up_.load(); }
  bool NoBrokerUp() const override { return stats_seen_.load() && brokers_up_.load() == 0; }

 private:
  KafkaProducer() = default;
  static absl::StatusOr<std::unique_ptr<KafkaProducer>> Make(const ProducerConfig& config,
                                                             bool quiet);
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  static int OnStats(rd_kafka_t* rk, char* json, size_t len, void* opaque);
  static void OnQueueEvent(rd_kafka_t* rk, void* opaque);
  static void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  rd_kafka_topic_t* Topic(const std::string& name);

  rd_kafka_t* rk_ = nullptr;
  std::string agent_id_;
  std::unordered_map<std::string, rd_kafka_topic_t*> topics_;
  // Re-produces a message librdkafka purged that PurgeQueued() was not asked to take
  // back; false if it could not (then it is reported kPurged).
  bool ProduceAgain(const rd_kafka_message_t* msg);
  std::vector<DeliveryReport>* sink_ = nullptr;  // set during Poll()
  // Set during PurgeQueued(): the partitions to take back, and those whose purged
  // messages are given back because one of them could not be produced again.
  const std::vector<TopicPartition>* purging_ = nullptr;
  std::vector<std::pair<std::string, int32_t>> given_back_;
  std::vector<DeliveryReport> stray_;            // reports served outside Poll()
  std::atomic<int> brokers_up_{0};               // 0 until the first statistics
  std::atomic<bool> stats_seen_{false};
  std::function<void()> on_reports_;
  SecretScrubber scrubber_;  // read by librdkafka's threads; set before the handle exists
};

// One librdkafka log line into the agent's log, at the matching level, with the secret
// values of `scrubber` replaced: librdkafka's debug output may quote a configured value
// (in 2.0.2 it dumps sasl.oauthbearer.client.secret unredacted with debug=conf).
void LogLibrdkafkaLine(const SecretScrubber& scrubber, int level, const char* fac, const char* buf);

}  // namespace kspool::agent
