#include "tools/bench/kafka_ceiling.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <memory>
#include <vector>

#include "agent/kafka/kafka_producer.h"
#include "tools/bench/cpu.h"
#include "tools/bench/printable_random.h"

namespace kspool::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Distinct random printable values, as the peer benchmark's feeds send: identical ones
// would let lz4 shrink every batch to almost nothing. Messages take them in turn; 4,096
// of them span more than lz4's 64 KiB window.
constexpr size_t kValues = 4096;
std::vector<std::string> PrintableValues(int size) {
  PrintableRandom random;
  std::vector<std::string> values(kValues, std::string(static_cast<size_t>(size), ' '));
  for (std::string& v : values) random.Fill(&v);
  return values;
}

// What both modes count while they produce and wait.
struct Tally {
  uint64_t produced = 0, delivered = 0, failed = 0;
  std::string first_error;
  bool Done() const { return delivered + failed >= produced; }
};

absl::StatusOr<KafkaCeilingResult> Finish(const Tally& t, double cpu, double seconds) {
  if (t.failed > 0) {
    return absl::UnavailableError("kafka ceiling: " + std::to_string(t.failed) +
                                  " messages not delivered, first: " + t.first_error);
  }
  if (!t.Done()) return absl::DeadlineExceededError("kafka ceiling: acknowledgements missing");
  KafkaCeilingResult r;
  r.delivered = t.delivered;
  r.seconds = seconds;
  r.delivered_per_s = seconds > 0 ? double(t.delivered) / seconds : 0;
  r.cpu_us_per_message = t.delivered ? cpu / double(t.delivered) * 1e6 : 0;
  return r;
}

absl::StatusOr<KafkaCeilingResult> RunKspool(const std::string& brokers, int size, double seconds) {
  // Produce() does not copy the value, which stays put in its entry: the entries are
  // used in turn, only their sequence numbers (copied into a header) change. Made
  // before the producer, so that they outlive it on every return.
  std::vector<wal::Entry> entries(kValues);
  std::vector<std::string> values = PrintableValues(size);
  for (size_t i = 0; i < kValues; ++i) {
    entries[i].record.topic = "bench-0";
    entries[i].record.value = std::move(values[i]);
    entries[i].record.receive_time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count();
  }
  agent::ProducerConfig pc;
  pc.brokers = brokers;
  pc.agent_id = "b0b0b0b0b0b0b0b0";  // the agent's ids are 16 hex digits
  auto producer = agent::KafkaProducer::Create(pc);
  if (!producer.ok()) return producer.status();
  Tally t;
  std::vector<agent::DeliveryReport> reports;
  auto poll = [&](int ms) {
    reports.clear();
    (*producer)->Poll(ms, &reports);
    for (const agent::DeliveryReport& r : reports) {
      if (r.result == agent::DeliveryResult::kDelivered) {
        ++t.delivered;
      } else if (t.failed++ == 0) {
        t.first_error = r.error_name + ": " + r.error;
      }
    }
  };
  const double cpu0 = ProcessCpuSeconds();
  const auto start = Clock::now();
  while (Since(start) < seconds) {
    for (int i = 0; i < 1024; ++i) {
      wal::Entry& e = entries[t.produced % kValues];
      e.seq = t.produced + 1;
      agent::DeliveryReport r = (*producer)->Produce(e, agent::kAnyPartition);
      if (r.result == agent::DeliveryResult::kQueued) {
        ++t.produced;
      } else if (r.result == agent::DeliveryResult::kQueueFull) {
        poll(1);
      } else {
        return absl::UnavailableError("kafka ceiling: produce: " + r.error_name + ": " + r.error);
      }
    }
    poll(0);
  }
  while (!t.Done() && Since(start) < seconds + 60) poll(100);
  const double span = Since(start);
  return Finish(t, ProcessCpuSeconds() - cpu0, span);
}

void OnPlainDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* t = static_cast<Tally*>(opaque);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++t->delivered;
  } else if (t->failed++ == 0) {
    t->first_error = rd_kafka_err2str(m->err);
  }
}

absl::StatusOr<KafkaCeilingResult> RunPlain(const std::string& brokers, int size, double seconds) {
  Tally t;  // both outlive the client, which reports into one and points into the other
  const std::vector<std::string> values = PrintableValues(size);
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::vector<std::pair<const char*, std::string>> settings = {
      {"bootstrap.servers", brokers},
      {"compression.codec", "lz4"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"}};
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(std::string("kafka ceiling: ") + k + ": " + err);
    }
  }
  rd_kafka_conf_set_opaque(conf, &t);
  rd_kafka_conf_set_dr_msg_cb(conf, &OnPlainDelivery);
  std::unique_ptr<rd_kafka_t, void (*)(rd_kafka_t*)> rk(
      rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err)), &rd_kafka_destroy);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError(std::string("kafka ceiling: ") + err);
  }
  const double cpu0 = ProcessCpuSeconds();
  const auto start = Clock::now();
  while (Since(start) < seconds) {
    for (int i = 0; i < 1024; ++i) {
      const std::string& v = values[t.produced % kValues];
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk.get(), RD_KAFKA_V_TOPIC("bench-0"), RD_KAFKA_V_MSGFLAGS(0),
          RD_KAFKA_V_VALUE(const_cast<char*>(v.data()), v.size()), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++t.produced;
      } else if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk.get(), 1);
      } else {
        return absl::UnavailableError(std::string("kafka ceiling: produce: ") +
                                      rd_kafka_err2str(e));
      }
    }
    rd_kafka_poll(rk.get(), 0);
  }
  while (!t.Done() && Since(start) < seconds + 60) rd_kafka_poll(rk.get(), 100);
  const double span = Since(start);
  return Finish(t, ProcessCpuSeconds() - cpu0, span);
}

}  // namespace

absl::StatusOr<KafkaCeilingResult> MeasureKafkaCeiling(const std::string& brokers,
                                                       KafkaCeilingMode mode, int size,
                                                       double seconds) {
  return mode == KafkaCeilingMode::kKspool ? RunKspool(brokers, size, seconds)
                                           : RunPlain(brokers, size, seconds);
}

}  // namespace kspool::bench
