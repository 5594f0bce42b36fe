// Counting deliveries in Kafka, for the peer benchmark (tools/bench-peers.sh): the sum of
// the high watermarks of every partition of some topics, read with librdkafka
// (metadata, then ListOffsets per partition), so a forwarder's rate is what reached
// Kafka, whoever sent it there. WaitForKafka() polls that sum until a forwarder has
// delivered what it was given, or its deliveries stop, and samples the forwarder's CPU
// time at the last increase.
// Thread safety: a KafkaCount belongs to one thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kspool::bench {

class KafkaCount {
 public:
  static absl::StatusOr<std::unique_ptr<KafkaCount>> Connect(const std::string& brokers);
  ~KafkaCount();
  // The sum of the high watermarks of all the partitions of `topics`.
  absl::StatusOr<uint64_t> Sum(const std::vector<std::string>& topics);

 private:
  explicit KafkaCount(rd_kafka_t* rk) : rk_(rk) {}
  rd_kafka_t* rk_;
};

struct WaitResult {
  uint64_t offsets = 0;      // the sum at the end
  double last_change_s = 0;  // since the call, when the sum last grew (0: never)
  double pid_cpu_s = 0;      // `pid`'s utime+stime then (at the first poll if never)
  double waited_s = 0;
  bool reached = false;  // offsets >= from + expect
};

// Polls every 100 ms until the sum reaches from + expect, or has not grown for idle_s,
// or max_wait_s have passed.
absl::StatusOr<WaitResult> WaitForKafka(KafkaCount& count, const std::vector<std::string>& topics,
                                        uint64_t from, uint64_t expect, int pid, double idle_s,
                                        double max_wait_s);

}  // namespace kspool::bench
