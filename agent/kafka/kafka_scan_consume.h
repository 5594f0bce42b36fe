// The consuming half of PartitionScanner::ScanTopic (kafka_partition_scanner.h): reads the
// partitions whose offsets are resolved, with the legacy consumer API (no group), until
// each reached its end or a bound stopped them all. Internal to agent/kafka.
// Thread safety: one call at a time per topic and handle (the scanner's lock).
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <string>
#include <vector>

#include "agent/kafka/kafka_partition_scanner.h"

namespace kspool::agent {

struct ConsumeRound {
  rd_kafka_t* rk = nullptr;  // a consumer handle, auto.offset.reset=error, partition EOF on
  std::string topic;
  std::string agent_id;
  uint64_t max_bytes = 0;
  std::chrono::steady_clock::time_point deadline;
};

// Reads each of `parts` (status OK, start_offset < high_watermark, next_offset =
// start_offset) and fills in its records, offsets, end and, for a partition that failed
// on the way, its status. Adds the bytes read to *total_bytes.
void ConsumePartitions(const ConsumeRound& round, const std::vector<PartitionScan*>& parts,
                       uint64_t* total_bytes);

// The status for a partition-level librdkafka error: NOT_FOUND for an unknown topic or
// partition, PERMISSION_DENIED for an authorization failure, else UNAVAILABLE.
absl::Status PartitionErrorStatus(rd_kafka_resp_err_t err, const std::string& what);

}  // namespace kspool::agent
