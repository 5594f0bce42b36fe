#include "agent/kafka/kafka_metadata.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "agent/kafka/kafka_producer.h"

namespace kspool::agent {

absl::StatusOr<std::unique_ptr<KafkaMetadata>> KafkaMetadata::Create(
    const std::string& brokers, const std::vector<std::string>& options, size_t max_topics) {
  std::unique_ptr<KafkaMetadata> m(new KafkaMetadata());
  m->brokers_ = brokers;
  m->options_ = options;
  m->max_topics_ = max_topics;
  // Its log (debug output with --kafka-option debug=...) goes where the producer's does,
  // with secret values scrubbed.
  m->scrubber_ = SecretScrubber(options);
  absl::StatusOr<std::shared_ptr<rd_kafka_t>> rk = m->MakeHandle();
  if (!rk.ok()) return rk.status();
  MutexLock l(&m->mu_);
  m->rk_ = std::move(rk).value();
  return m;
}

absl::StatusOr<std::shared_ptr<rd_kafka_t>> KafkaMetadata::MakeHandle() {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers_.c_str(), err, sizeof(err));
  // Security and client settings the user passed apply here too; the producer-only
  // ones are rejected by librdkafka for no handle type, so ignoring errors is safe.
  for (const std::string& kv : options_) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    rd_kafka_conf_set(conf, kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), err, sizeof(err));
  }
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  rd_kafka_conf_set_opaque(conf, &scrubber_);
  rd_kafka_conf_set_log_cb(conf, [](const rd_kafka_t* rk, int level, const char* fac,
                                    const char* buf) {
    LogLibrdkafkaLine(*static_cast<const SecretScrubber*>(rd_kafka_opaque(rk)), level, fac, buf);
  });
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError("kafka metadata client: " + scrubber_.Scrub(err));
  }
  return std::shared_ptr<rd_kafka_t>(rk, [](rd_kafka_t* h) { rd_kafka_destroy(h); });
}

std::shared_ptr<rd_kafka_t> KafkaMetadata::HandleFor(const std::string& topic) {
  std::shared_ptr<rd_kafka_t> replaced;  // destroyed after the lock, if no request holds it
  MutexLock l(&mu_);
  if (max_topics_ == 0 || !names_.insert(topic).second || names_.size() <= max_topics_) {
    return rk_;
  }
  // librdkafka keeps every topic a handle was asked about, for the handle's life: a new
  // handle gives that back once the requests still using the old one return.
  absl::StatusOr<std::shared_ptr<rd_kafka_t>> fresh = MakeHandle();
  if (fresh.ok()) {
    replaced = std::exchange(rk_, std::move(fresh).value());
    names_ = {topic};
    handles_made_.fetch_add(1);
  }
  return rk_;
}

KafkaMetadata::~KafkaMetadata() = default;

absl::StatusOr<std::vector<bool>> FreshPartitionLeaders(rd_kafka_t* rk, rd_kafka_topic_t* rkt,
                                                        const std::string& topic, int timeout_ms) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError("metadata for topic " + topic + ": " + rd_kafka_err2str(err));
  }
  absl::StatusOr<std::vector<bool>> result =
      absl::UnavailableError("no metadata for topic " + topic);
  for (int i = 0; i < md->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& t = md->topics[i];
    if (topic != t.topic) continue;
    if (t.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      result = absl::NotFoundError("topic " + topic + " does not exist");
    } else if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      result =
          absl::UnavailableError("metadata for topic " + topic + ": " + rd_kafka_err2str(t.err));
    } else if (t.partition_cnt <= 0) {
      result = absl::UnavailableError("topic " + topic + " has no partitions yet");
    } else {
      std::vector<bool> leaders(static_cast<size_t>(t.partition_cnt), false);
      for (int p = 0; p < t.partition_cnt; ++p) {
        const rd_kafka_metadata_partition_t& mp = t.partitions[p];
        if (mp.id >= 0 && mp.id < t.partition_cnt) {
          leaders[static_cast<size_t>(mp.id)] =
              mp.leader >= 0 && mp.err == RD_KAFKA_RESP_ERR_NO_ERROR;
        }
      }
      result = std::move(leaders);
    }
  }
  rd_kafka_metadata_destroy(md);
  return result;
}

absl::StatusOr<int> KafkaMetadata::PartitionCount(const std::string& topic, int timeout_ms) {
  absl::StatusOr<std::vector<bool>> leaders = PartitionLeaders(topic, timeout_ms);
  if (!leaders.ok()) return leaders.status();
  return static_cast<int>(leaders->size());
}

absl::StatusOr<std::vector<bool>> KafkaMetadata::PartitionLeaders(const std::string& topic,
                                                                  int timeout_ms) {
  const std::shared_ptr<rd_kafka_t> rk = HandleFor(topic);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk.get(), topic.c_str(), nullptr);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  absl::StatusOr<std::vector<bool>> leaders =
      absl::UnavailableError("metadata for topic " + topic + ": the agent is stopping");
  while (!cancelled_.load()) {
    const Clock::time_point start = Clock::now();
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start).count();
    const int slice = static_cast<int>(std::clamp<int64_t>(left, 1, kSliceMs));
    leaders = FreshPartitionLeaders(rk.get(), rkt, topic, slice);
    // Asked again only when the slice ran out (the cluster did not answer in time), never
    // after an error that came back at once: no tight loop on a refused connection.
    if (leaders.ok() || absl::IsNotFound(leaders.status()) || left <= kSliceMs ||
        Clock::now() - start < std::chrono::milliseconds(slice)) {
      break;
    }
  }
  rd_kafka_topic_destroy(rkt);
  return leaders;
}

}  // namespace kspool::agent
