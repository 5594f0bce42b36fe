#include "tools/bench/kafka_count.h"

#include <chrono>
#include <thread>

#include "absl/status/status.h"
#include "tools/bench/cpu.h"

namespace kspool::bench {
namespace {

constexpr int kTimeoutMs = 5000;

}  // namespace

absl::StatusOr<std::unique_ptr<KafkaCount>> KafkaCount::Connect(const std::string& brokers) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] :
       {std::pair<const char*, std::string>{"bootstrap.servers", brokers}, {"log_level", "3"}}) {
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return absl::InvalidArgumentError(std::string(k) + ": " + err);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) return absl::InternalError(std::string("rd_kafka_new: ") + err);
  return std::unique_ptr<KafkaCount>(new KafkaCount(rk));
}

KafkaCount::~KafkaCount() { rd_kafka_destroy(rk_); }

absl::StatusOr<uint64_t> KafkaCount::Sum(const std::vector<std::string>& topics) {
  uint64_t sum = 0;
  for (const std::string& name : topics) {
    rd_kafka_topic_t* topic = rd_kafka_topic_new(rk_, name.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, topic, &md, kTimeoutMs);
    rd_kafka_topic_destroy(topic);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return absl::UnavailableError("metadata of " + name + ": " + rd_kafka_err2str(e));
    }
    const int partitions = md->topic_cnt == 1 ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
    if (partitions == 0) return absl::NotFoundError("topic " + name + " has no partitions");
    for (int p = 0; p < partitions; ++p) {
      int64_t low = 0, high = 0;
      e = rd_kafka_query_watermark_offsets(rk_, name.c_str(), p, &low, &high, kTimeoutMs);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return absl::UnavailableError("watermarks of " + name + "/" + std::to_string(p) + ": " +
                                      rd_kafka_err2str(e));
      }
      sum += static_cast<uint64_t>(high);
    }
  }
  return sum;
}

absl::StatusOr<WaitResult> WaitForKafka(KafkaCount& count, const std::vector<std::string>& topics,
                                        uint64_t from, uint64_t expect, int pid, double idle_s,
                                        double max_wait_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  WaitResult r;
  bool first = true;
  for (;;) {
    absl::StatusOr<uint64_t> sum = count.Sum(topics);
    if (!sum.ok()) return sum.status();
    if (first || *sum > r.offsets) {
      r.pid_cpu_s = TakeCpuSnapshot(pid).agent_s;
      if (!first) r.last_change_s = since();
      r.offsets = *sum;
      first = false;
    }
    r.waited_s = since();
    r.reached = r.offsets >= from + expect;
    if (r.reached || r.waited_s - r.last_change_s >= idle_s || r.waited_s >= max_wait_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return r;
}

}  // namespace kspool::bench
