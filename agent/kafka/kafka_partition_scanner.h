// PartitionScanner: reads partitions of a topic back from Kafka and finds the records this
// agent produced (headers kspool.agent = its id, kspool.seq = the entry's sequence number;
// kafka_scan_record.h), so that after a restart the entries already in Kafka are settled
// as delivered instead of being produced again. One call reads every partition asked for,
// with one consumer: partitions are assigned by hand, no consumer group, no offset
// commits, isolation.level=read_uncommitted (a record is found once it is in the log).
//
// What a scan reads: for each partition, from its start (an offset, or the first offset
// at or after a time, Kafka's ListOffsets by timestamp) up to the high watermark as it was
// when the scan began; records produced later are not waited for. A start below the log
// start begins at the log start (records deleted by retention cannot be read) and the
// result says so; a start beyond the high watermark is OUT_OF_RANGE for that partition
// (the log was truncated or the topic made again).
//
// Bounds: one call returns within limits.time_budget_ms (plus the time to stop its fetches)
// and reads at most limits.max_bytes (plus one record) across its partitions; a partition
// the bound stopped says which bound, and where a later scan would go on (next_offset).
// librdkafka's prefetch is bounded per partition (queued.max.messages.kbytes, 4 MiB unless
// --kafka-option says otherwise). The results hold one FoundRecord per record found.
//
// Errors: the call's status is for the topic (INVALID_ARGUMENT a bad request, NOT_FOUND
// no such topic, UNAVAILABLE no metadata within the budget: Kafka down or unreachable);
// each partition has its own (NOT_FOUND no such partition, UNAVAILABLE no leader or its
// offsets not known in time, OUT_OF_RANGE a start beyond the end, PERMISSION_DENIED).
// A record with this agent's id but no readable kspool.seq is not found, only counted
// (malformed): it cannot say which entry it was, and the entry is produced again.
//
// Configuration: the brokers and --kafka-option of the producer (security, client
// settings; librdkafka ignores the producer-only ones, and its warnings about them are
// dropped); the consumer settings above are fixed after them, group.id is never set.
// Thread safety: calls are serialized by an internal lock; any thread may make them.
// Ownership: the scanner owns its librdkafka handle; results are plain values.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/kafka/kafka_secrets.h"
#include "base/mutex.h"

namespace kspool::agent {

// Where to begin reading one partition: an offset (>= 0) or, when none is known, a
// time: the first record whose timestamp is at or after from_time_ms.
struct ScanStart {
  int32_t partition = -1;
  int64_t from_offset = -1;
  int64_t from_time_ms = -1;  // used when from_offset < 0
  static ScanStart AtOffset(int32_t partition, int64_t offset) { return {partition, offset, -1}; }
  static ScanStart AtTime(int32_t partition, int64_t time_ms) { return {partition, -1, time_ms}; }
};

struct ScanLimits {
  uint64_t max_bytes = 256ull << 20;  // keys, values and headers of the records read
  int64_t time_budget_ms = 30000;     // the whole call, metadata and offsets included
};

enum class ScanEnd {
  kReachedEnd,  // read up to the high watermark of the scan's start
  kByteBound,   // limits.max_bytes was read
  kTimeBudget,  // limits.time_budget_ms ran out (also: the partition lost its leader)
};
const char* ScanEndName(ScanEnd end);

struct FoundRecord {
  uint64_t seq = 0;
  int64_t offset = -1;
  bool operator==(const FoundRecord& o) const { return seq == o.seq && offset == o.offset; }
};

struct PartitionScan {
  int32_t partition = -1;
  absl::Status status;          // not OK: nothing below is meaningful but the offsets known
  int64_t log_start = -1;       // the partition's first offset, at the scan's start
  int64_t high_watermark = -1;  // where the scan ends
  int64_t start_offset = -1;    // where reading began
  // Part of [from_offset, high_watermark) was no longer in the log (deleted by retention,
  // before or during the scan): the scan went on from the log start; those are not read.
  bool below_log_start = false;
  int64_t next_offset = -1;  // the first offset not read: high_watermark once kReachedEnd
  int64_t last_offset = -1;  // of the last record read; -1 if none
  uint64_t records = 0;      // records read
  uint64_t bytes = 0;        // their keys, values and headers
  uint64_t malformed = 0;    // this agent's id without a readable kspool.seq
  ScanEnd end = ScanEnd::kReachedEnd;
  std::vector<FoundRecord> found;  // this agent's records, in offset order
};

struct TopicScan {
  std::vector<PartitionScan> partitions;  // in the order of the starts asked for
  uint64_t bytes = 0;                     // across them
  // Every partition OK and read to its end.
  bool complete() const;
};

class PartitionScanner {
 public:
  // `options`: --kafka-option's KEY=VALUE; INVALID_ARGUMENT (no secret value shown) if
  // librdkafka refuses one or makes no consumer of them.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PartitionScanner>> Create(
      const std::string& brokers, const std::vector<std::string>& options);
  ~PartitionScanner();

  // The primary call: the partitions of `topic` in `starts` (each at most once), read in
  // one pass. INVALID_ARGUMENT for an empty topic or agent_id, no starts, a partition
  // twice or below 0, a start with neither offset nor time, limits not above 0.
  [[nodiscard]] absl::StatusOr<TopicScan> ScanTopic(const std::string& topic,
                                                    const std::vector<ScanStart>& starts,
                                                    const ScanLimits& limits,
                                                    const std::string& agent_id);
  // One partition: its own status is the call's.
  [[nodiscard]] absl::StatusOr<PartitionScan> Scan(const std::string& topic, ScanStart start,
                                                   const ScanLimits& limits,
                                                   const std::string& agent_id);

 private:
  PartitionScanner() = default;
  static void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);

  SecretScrubber scrubber_;  // read by librdkafka's threads; set before the handle exists
  rd_kafka_t* rk_ = nullptr;
  Mutex mu_;  // one scan at a time: a partition is consumed by one call only
};

}  // namespace kspool::agent
