#include "agent/kafka/kafka_producer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "agent/kafka/kafka_errors.h"
#include "agent/kafka/kafka_options.h"
#include "agent/kafka/kafka_stats.h"

namespace kspool::agent {
namespace {

// Defaults for the spool; the fixed ones are set last (CheckKafkaOption refuses other
// values for them). linger.ms is 1, not librdkafka's 5: a WAIT_FOR_KAFKA Send waits for
// it, and under load batches fill while requests are in flight anyway (README,
// Performance: T6 p50 9.9 -> 5.6 ms, T1 unchanged within the machine's noise).
const std::vector<std::pair<std::string, std::string>> kFixed = {{"acks", "all"},
                                                                 {"enable.idempotence", "true"}};
const std::vector<std::pair<std::string, std::string>> kDefaults = {
    {"linger.ms", "1"},
    {"compression.codec", "lz4"},
    {"partitioner", "murmur2_random"},
    {"queue.buffering.max.messages", "1000000"},
    {"queue.buffering.max.kbytes", "1048576"},
    {"socket.keepalive.enable", "true"},
    {"statistics.interval.ms", "1000"}};

}  // namespace

absl::StatusOr<std::unique_ptr<KafkaProducer>> KafkaProducer::Create(const ProducerConfig& cfg) {
  return Make(cfg, /*quiet=*/false);
}

absl::Status KafkaProducer::CheckOptions(const std::vector<std::string>& options) {
  ProducerConfig pc;
  pc.options = options;
  pc.agent_id = "0000000000000000";
  return Make(pc, /*quiet=*/true).status();
}

absl::StatusOr<std::unique_ptr<KafkaProducer>> KafkaProducer::Make(const ProducerConfig& cfg,
                                                                   bool quiet) {
  std::unique_ptr<KafkaProducer> p(new KafkaProducer());
  p->agent_id_ = cfg.agent_id;
  p->scrubber_ = SecretScrubber(cfg.options);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  // Errors name the option; a secret's value is shown nowhere in them, not even where
  // librdkafka's message quotes it or another option was given the same value.
  auto set = [&](const std::string& k, const std::string& v) -> absl::Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      return absl::InvalidArgumentError(
          p->scrubber_.Scrub("kafka option " + RedactKafkaOption(k + "=" + v) + ": " + err));
    }
    return absl::OkStatus();
  };
  absl::Status s = cfg.brokers.empty() ? absl::OkStatus() : set("bootstrap.servers", cfg.brokers);
  for (const auto& [k, v] : kDefaults) {
    if (s.ok()) s = set(k, v);
  }
  for (const std::string& kv : cfg.options) {
    if (s.ok()) s = CheckKafkaOption(kv);
    if (!s.ok()) break;
    const size_t eq = kv.find('=');
    s = set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const auto& [k, v] : kFixed) {
    if (s.ok()) s = set(k, v);
  }
  if (s.ok() && cfg.max_message_age_ms > 0) {
    char cur[64];
    size_t n = sizeof(cur);
    rd_kafka_conf_get(conf, "message.timeout.ms", cur, &n);
    if (std::stoull(cur) == 0 || std::stoull(cur) > cfg.max_message_age_ms) {
      s = set("message.timeout.ms", std::to_string(cfg.max_message_age_ms));
    }
  }
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  rd_kafka_conf_set_opaque(conf, p.get());
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaProducer::OnDelivery);
  if (quiet) {
    rd_kafka_conf_set_log_cb(conf, [](const rd_kafka_t*, int, const char*, const char*) {});
  } else {
    rd_kafka_conf_set_error_cb(conf, &KafkaProducer::OnError);
    rd_kafka_conf_set_log_cb(conf, &KafkaProducer::OnLog);
    rd_kafka_conf_set_stats_cb(conf, &KafkaProducer::OnStats);
  }
  p->rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!p->rk_) {
    rd_kafka_conf_destroy(conf);  // still ours when rd_kafka_new fails
    return absl::InvalidArgumentError("kafka options: librdkafka refuses them: " +
                                      p->scrubber_.Scrub(err));
  }
  if (cfg.on_reports) {
    p->on_reports_ = cfg.on_reports;
    rd_kafka_queue_t* main_queue = rd_kafka_queue_get_main(p->rk_);
    rd_kafka_queue_cb_event_enable(main_queue, &KafkaProducer::OnQueueEvent, p.get());
    rd_kafka_queue_destroy(main_queue);
  }
  return p;
}

KafkaProducer::~KafkaProducer() {
  if (!rk_) return;
  for (auto& [name, t] : topics_) rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk_);
}

rd_kafka_topic_t* KafkaProducer::Topic(const std::string& name) {
  auto it = topics_.find(name);
  if (it != topics_.end()) return it->second;
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, name.c_str(), nullptr);
  topics_[name] = t;
  return t;
}

DeliveryReport KafkaProducer::Produce(const wal::Entry& e, int32_t partition) {
  const wal::Record& r = e.record;
  rd_kafka_headers_t* hdrs = rd_kafka_headers_new(r.headers.size() + 2);
  std::string seq = std::to_string(e.seq);
  rd_kafka_header_add(hdrs, "kspool.agent", -1, agent_id_.data(), agent_id_.size());
  rd_kafka_header_add(hdrs, "kspool.seq", -1, seq.data(), seq.size());
  for (const wal::Header& h : r.headers) {
    rd_kafka_header_add(hdrs, h.key.data(), h.key.size(), h.value.data(), h.value.size());
  }
  rd_kafka_topic_t* topic = Topic(r.topic);
  const int64_t ts = r.client_timestamp_ms.value_or(r.receive_time_ms);
  const char* key = r.key ? r.key->data() : nullptr;
  const size_t key_len = r.key ? r.key->size() : 0;
  char* value = const_cast<char*>(r.value.data());
  const size_t value_len = r.value.size();
  void* opaque = reinterpret_cast<void*>(static_cast<uintptr_t>(e.seq));
  // No copy flag: the payload lives in the drain window until the report arrives.
  rd_kafka_resp_err_t err =
      rd_kafka_producev(rk_, RD_KAFKA_V_RKT(topic),
                        RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
                        RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_VALUE(value, value_len),
                        RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_TIMESTAMP(ts),
                        RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_headers_destroy(hdrs);
  DeliveryReport report = ReportOfProduce(err);
  report.seq = e.seq;
  return report;
}

void KafkaProducer::Poll(int timeout_ms, std::vector<DeliveryReport>* out) {
  if (!stray_.empty()) {
    out->insert(out->end(), stray_.begin(), stray_.end());
    stray_.clear();
  }
  sink_ = out;
  rd_kafka_poll(rk_, timeout_ms);
  sink_ = nullptr;
}

int KafkaProducer::OutstandingMessages() const { return rd_kafka_outq_len(rk_); }

void KafkaProducer::PurgeQueued(const std::vector<TopicPartition>& partitions) {
  if (partitions.empty()) return;
  // rd_kafka_purge() (blocking) has every purged message's report queued when it returns;
  // serving them now, before the drain produces anything else, puts the other
  // partitions' messages back at the end of their queues in their order.
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE);
  purging_ = &partitions;
  rd_kafka_poll(rk_, 0);
  purging_ = nullptr;
  given_back_.clear();
}

bool KafkaProducer::ProduceAgain(const rd_kafka_message_t* msg) {
  const std::string topic = rd_kafka_topic_name(msg->rkt);
  const std::pair<std::string, int32_t> tp{topic, msg->partition};
  for (const TopicPartition& p : *purging_) {
    if (p.topic == topic && (p.partition == msg->partition || p.partition == kEveryPartition)) {
      return false;
    }
  }
  // Once one message of a partition is given back, the later ones are too: none may
  // overtake it.
  if (std::find(given_back_.begin(), given_back_.end(), tp) != given_back_.end()) return false;
  rd_kafka_headers_t* hdrs = nullptr;
  rd_kafka_headers_t* old = nullptr;
  if (rd_kafka_message_headers(msg, &old) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    hdrs = rd_kafka_headers_copy(old);
  }
  rd_kafka_timestamp_type_t ts_type;
  const int64_t ts = rd_kafka_message_timestamp(msg, &ts_type);
  rd_kafka_resp_err_t err = rd_kafka_producev(
      rk_, RD_KAFKA_V_RKT(msg->rkt), RD_KAFKA_V_PARTITION(msg->partition),
      RD_KAFKA_V_MSGFLAGS(0), RD_KAFKA_V_VALUE(msg->payload, msg->len),
      RD_KAFKA_V_KEY(msg->key, msg->key_len), RD_KAFKA_V_TIMESTAMP(ts),
      RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(msg->_private), RD_KAFKA_V_END);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return true;
  if (hdrs) rd_kafka_headers_destroy(hdrs);
  given_back_.push_back(tp);
  return false;
}

void KafkaProducer::PurgeAll() {
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
}

std::string KafkaProducer::FatalError() const {
  char buf[512];
  if (rd_kafka_fatal_error(rk_, buf, sizeof(buf)) == RD_KAFKA_RESP_ERR_NO_ERROR) return "";
  return scrubber_.Scrub(buf);
}

void KafkaProducer::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
  auto* self = static_cast<KafkaProducer*>(opaque);
  if (self->purging_ && msg->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE && self->ProduceAgain(msg)) {
    return;  // not asked to take it back: queued again, its report comes later
  }
  DeliveryReport r = ReportOfDelivery(msg->err);
  r.seq = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(msg->_private));
  r.partition = msg->partition;
  r.offset = msg->offset;
  r.possibly_persisted = r.result != DeliveryResult::kDelivered &&
                         rd_kafka_message_status(msg) == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED;
  (self->sink_ ? self->sink_ : &self->stray_)->push_back(std::move(r));
}

void KafkaProducer::OnQueueEvent(rd_kafka_t*, void* opaque) {
  static_cast<KafkaProducer*>(opaque)->on_reports_();
}

void KafkaProducer::OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  const SecretScrubber& scrubber = static_cast<KafkaProducer*>(opaque)->scrubber_;
  auto e = static_cast<rd_kafka_resp_err_t>(err);
  if (e == RD_KAFKA_RESP_ERR__FATAL) {
    char buf[512];
    rd_kafka_fatal_error(rk, buf, sizeof(buf));
    spdlog::error("kafka: fatal producer error: {}", scrubber.Scrub(buf));
  } else {
    spdlog::warn("kafka: {} ({})", scrubber.Scrub(reason), rd_kafka_err2name(e));
  }
}

int KafkaProducer::OnStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  auto* self = static_cast<KafkaProducer*>(opaque);
  const std::optional<int> up = BrokersUpInStats(json, len);
  if (!up) return 0;
  self->brokers_up_.store(*up);
  self->stats_seen_.store(true);
  return 0;  // librdkafka frees the JSON
}

void KafkaProducer::OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  LogLibrdkafkaLine(static_cast<KafkaProducer*>(rd_kafka_opaque(rk))->scrubber_, level, fac, buf);
}

void LogLibrdkafkaLine(const SecretScrubber& scrubber, int level, const char* fac,
                       const char* buf) {
  const std::string line = scrubber.Scrub(buf);
  if (level <= 3) {
    spdlog::error("librdkafka {}: {}", fac, line);
  } else if (level <= 4) {
    spdlog::warn("librdkafka {}: {}", fac, line);
  } else {
    spdlog::debug("librdkafka {}: {}", fac, line);
  }
}

}  // namespace kspool::agent
