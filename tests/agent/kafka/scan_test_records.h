// For the PartitionScanner tests: a kspool-devkafka cluster and a plain librdkafka
// producer that writes records with any headers (kspool's, another agent's, malformed,
// none) and returns their offsets.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "agent/kafka/kafka_partition_scanner.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"

namespace kspool::agent {
// gtest prints a FoundRecord as {seq@offset}.
inline void PrintTo(const FoundRecord& r, std::ostream* os) {
  *os << "{" << r.seq << "@" << r.offset << "}";
}
}  // namespace kspool::agent

namespace kspool::testing {

inline constexpr char kAgent[] = "0123456789abcdef";

struct TestRecord {
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t timestamp_ms = 0;  // 0: now
};

// A record as this agent's producer writes it (kspool.agent, then kspool.seq).
TestRecord Ours(uint64_t seq, std::string value = "v");
// A record with the headers given and nothing else.
TestRecord With(std::vector<std::pair<std::string, std::string>> headers, std::string value = "v");

// Produces `records` to `topic`/`partition` in order (each in a batch of its own when
// `separate_batches`, else batched by the client) and returns their offsets; fails the
// test (offsets -1) if one is not delivered within 20 s.
std::vector<int64_t> ProduceRecords(const std::string& brokers, const std::string& topic,
                                    int32_t partition, const std::vector<TestRecord>& records,
                                    bool separate_batches = false);

class ScannerTest : public ::testing::Test {
 protected:
  // `topics`: "name:partitions" each, on a 3-broker cluster.
  void StartKafka(const std::vector<std::string>& topics);
  std::unique_ptr<agent::PartitionScanner> NewScanner(const std::vector<std::string>& options = {});

  TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
};

}  // namespace kspool::testing
