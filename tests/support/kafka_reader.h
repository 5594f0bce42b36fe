// KafkaReader: reads every record of a topic from the beginning with librdkafka's
// consumer (no group: partitions are assigned by hand), for delivery checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kspool::testing {

struct ConsumedRecord {
  int32_t partition = -1;
  int64_t offset = -1;
  std::optional<std::string> key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t timestamp_ms = 0;
  // From the kspool headers; 0 / empty when absent.
  uint64_t seq = 0;
  std::string agent;
};

// Reads `topic` until `min_records` have arrived (then until the end of every partition)
// or `timeout` passes.
std::vector<ConsumedRecord> ReadTopic(const std::string& brokers, const std::string& topic,
                                      size_t min_records, std::chrono::milliseconds timeout);

}  // namespace kspool::testing
