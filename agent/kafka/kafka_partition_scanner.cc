#include "agent/kafka/kafka_partition_scanner.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "agent/kafka/kafka_metadata.h"
#include "agent/kafka/kafka_options.h"
#include "agent/kafka/kafka_producer.h"
#include "agent/kafka/kafka_scan_consume.h"

namespace kspool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Set before --kafka-option: a prefetch bounded per partition in bytes (the legacy
// consumer's queue is per partition), not in messages: librdkafka 2.0.2 looks again at a
// partition whose queue is full only once a second, and a 1 MB fetch of small records is
// more than 10,000 messages (100,000 records of 84 bytes: 3 to 5 s with 10,000, 0.15 s
// without); and an end of partition seen within 100 ms.
const std::vector<std::pair<std::string, std::string>> kScannerDefaults = {
    {"queued.max.messages.kbytes", "4096"},
    {"queued.min.messages", "10000000"},
    {"fetch.wait.max.ms", "100"},
    {"log_level", "4"}};
// Set after it: what a scan is.
const std::vector<std::pair<std::string, std::string>> kScannerFixed = {
    {"enable.auto.commit", "false"},
    {"enable.auto.offset.store", "false"},
    {"isolation.level", "read_uncommitted"},
    {"enable.partition.eof", "true"},
    {"auto.offset.reset", "error"}};
// Never taken from --kafka-option: a group would mean a coordinator and commits, and a
// scan creates no topic (a consumer's default; set, librdkafka warns of brokers older
// than 0.11 and of librdkafka's mock cluster).
const std::set<std::string> kSkipped = {"group.id", "group.instance.id",
                                        "allow.auto.create.topics"};

int RemainingMs(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
}

// One ListOffsets round, one request per leader: for each partition, `what` is a time in
// ms, RD_KAFKA_OFFSET_BEGINNING or RD_KAFKA_OFFSET_END; back come its offset or its error.
struct Listed {
  int32_t partition = -1;
  int64_t what = 0;  // asked; the offset once answered
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
};
absl::Status ListOffsets(rd_kafka_t* rk, const std::string& topic, std::vector<Listed>* parts,
                         int timeout_ms) {
  if (parts->empty()) return absl::OkStatus();
  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(static_cast<int>(parts->size()));
  for (const Listed& l : *parts) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), l.partition)->offset = l.what;
  }
  const rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, list, timeout_ms);
  for (Listed& l : *parts) {
    const rd_kafka_topic_partition_t* tp =
        rd_kafka_topic_partition_list_find(list, topic.c_str(), l.partition);
    l.what = tp ? tp->offset : -1;
    l.err = tp ? tp->err : RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION;
  }
  rd_kafka_topic_partition_list_destroy(list);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError("offsets of topic " + topic + ": " + rd_kafka_err2str(err));
  }
  return absl::OkStatus();
}

absl::Status CheckRequest(const std::string& topic, const std::vector<ScanStart>& starts,
                          const ScanLimits& limits, const std::string& agent_id) {
  if (topic.empty()) return absl::InvalidArgumentError("scan: no topic");
  if (agent_id.empty()) return absl::InvalidArgumentError("scan: no agent id");
  if (starts.empty()) return absl::InvalidArgumentError("scan: no partitions");
  if (limits.max_bytes == 0 || limits.time_budget_ms <= 0) {
    return absl::InvalidArgumentError("scan: limits must be above 0");
  }
  std::set<int32_t> seen;
  for (const ScanStart& s : starts) {
    const std::string name = "scan of " + topic + " partition " + std::to_string(s.partition);
    if (s.partition < 0) return absl::InvalidArgumentError(name + ": bad partition");
    if (!seen.insert(s.partition).second) {
      return absl::InvalidArgumentError(name + ": asked for twice");
    }
    if (s.from_offset < 0 && s.from_time_ms < 0) {
      return absl::InvalidArgumentError(name + ": neither a start offset nor a start time");
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* ScanEndName(ScanEnd end) {
  switch (end) {
    case ScanEnd::kReachedEnd:
      return "reached_end";
    case ScanEnd::kByteBound:
      return "byte_bound";
    case ScanEnd::kTimeBudget:
      return "time_budget";
  }
  return "?";
}

bool TopicScan::complete() const {
  return std::all_of(partitions.begin(), partitions.end(), [](const PartitionScan& p) {
    return p.status.ok() && p.end == ScanEnd::kReachedEnd;
  });
}

absl::StatusOr<std::unique_ptr<PartitionScanner>> PartitionScanner::Create(
    const std::string& brokers, const std::vector<std::string>& options) {
  std::unique_ptr<PartitionScanner> s(new PartitionScanner());
  s->scrubber_ = SecretScrubber(options);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const std::string& k, const std::string& v) -> absl::Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      return absl::InvalidArgumentError(s->scrubber_.Scrub(
          "kafka option for the scanner " + RedactKafkaOption(k + "=" + v) + ": " + err));
    }
    return absl::OkStatus();
  };
  absl::Status st = set("bootstrap.servers", brokers);
  for (const auto& [k, v] : kScannerDefaults) {
    if (st.ok()) st = set(k, v);
  }
  for (const std::string& kv : options) {
    if (!st.ok()) break;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      st = absl::InvalidArgumentError("kafka option " + RedactKafkaOption(kv) + ": not KEY=VALUE");
    } else if (!kSkipped.count(kv.substr(0, eq))) {
      st = set(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  for (const auto& [k, v] : kScannerFixed) {
    if (st.ok()) st = set(k, v);
  }
  if (!st.ok()) {
    rd_kafka_conf_destroy(conf);
    return st;
  }
  rd_kafka_conf_set_opaque(conf, s.get());
  rd_kafka_conf_set_log_cb(conf, &PartitionScanner::OnLog);
  s->rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!s->rk_) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError("kafka scanner: librdkafka refuses its options: " +
                                      s->scrubber_.Scrub(err));
  }
  return s;
}

PartitionScanner::~PartitionScanner() {
  if (rk_) rd_kafka_destroy(rk_);
}

void PartitionScanner::OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  // The producer's options include producer-only properties; librdkafka warns of each.
  if (std::strcmp(fac, "CONFWARN") == 0) return;
  LogLibrdkafkaLine(static_cast<PartitionScanner*>(rd_kafka_opaque(rk))->scrubber_, level, fac,
                    buf);
}

absl::StatusOr<PartitionScan> PartitionScanner::Scan(const std::string& topic, ScanStart start,
                                                     const ScanLimits& limits,
                                                     const std::string& agent_id) {
  absl::StatusOr<TopicScan> scan = ScanTopic(topic, {start}, limits, agent_id);
  if (!scan.ok()) return scan.status();
  PartitionScan& p = scan->partitions.front();
  if (!p.status.ok()) return p.status;
  return std::move(p);
}

absl::StatusOr<TopicScan> PartitionScanner::ScanTopic(const std::string& topic,
                                                      const std::vector<ScanStart>& starts,
                                                      const ScanLimits& limits,
                                                      const std::string& agent_id) {
  if (absl::Status s = CheckRequest(topic, starts, limits, agent_id); !s.ok()) return s;
  const SteadyClock::time_point deadline =
      SteadyClock::now() + std::chrono::milliseconds(limits.time_budget_ms);
  MutexLock lock(&mu_);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  absl::StatusOr<std::vector<bool>> leaders =
      FreshPartitionLeaders(rk_, rkt, topic, std::max(1, RemainingMs(deadline)));
  rd_kafka_topic_destroy(rkt);
  if (!leaders.ok()) return leaders.status();

  TopicScan result;
  result.partitions.resize(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    PartitionScan& p = result.partitions[i];
    p.partition = starts[i].partition;
    const std::string name = "partition " + std::to_string(p.partition) + " of topic " + topic;
    if (static_cast<size_t>(p.partition) >= leaders->size()) {
      p.status = absl::NotFoundError(name + " does not exist (" + std::to_string(leaders->size()) +
                                     " partitions)");
    } else if (!(*leaders)[static_cast<size_t>(p.partition)]) {
      p.status = absl::UnavailableError(name + " has no leader");
    }
  }
  // The log start, the end, and the offsets of the start times, for the partitions with a
  // leader; one whose offsets are not all known is not read.
  auto list = [&](auto&& what, auto&& use) {
    std::vector<Listed> asked;
    std::vector<size_t> index;
    for (size_t i = 0; i < starts.size(); ++i) {
      const std::optional<int64_t> w = what(starts[i]);
      if (!result.partitions[i].status.ok() || !w) continue;
      asked.push_back({starts[i].partition, *w});
      index.push_back(i);
    }
    const absl::Status all = ListOffsets(rk_, topic, &asked, std::max(1, RemainingMs(deadline)));
    for (size_t j = 0; j < asked.size(); ++j) {
      PartitionScan& p = result.partitions[index[j]];
      if (!all.ok()) {
        p.status = all;
      } else if (asked[j].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        p.status = PartitionErrorStatus(
            asked[j].err, "offsets of partition " + std::to_string(p.partition) + " of " + topic);
      } else {
        use(p, starts[index[j]], asked[j].what);
      }
    }
  };
  using Want = std::optional<int64_t>;
  list([](const ScanStart&) { return Want(RD_KAFKA_OFFSET_BEGINNING); },
       [](PartitionScan& p, const ScanStart&, int64_t o) { p.log_start = o; });
  list([](const ScanStart&) { return Want(RD_KAFKA_OFFSET_END); },
       [](PartitionScan& p, const ScanStart&, int64_t o) { p.high_watermark = o; });
  list([](const ScanStart& s) { return s.from_offset < 0 ? Want(s.from_time_ms) : Want(); },
       // No record at or after the time: -1, nothing to read (nor after the end: one
       // produced since the end was asked for).
       [](PartitionScan& p, const ScanStart&, int64_t o) {
         p.start_offset = o < 0 ? p.high_watermark : std::min(o, p.high_watermark);
       });
  std::vector<PartitionScan*> to_read;
  for (size_t i = 0; i < starts.size(); ++i) {
    PartitionScan& p = result.partitions[i];
    if (!p.status.ok()) continue;
    if (starts[i].from_offset >= 0) p.start_offset = starts[i].from_offset;
    if (p.start_offset > p.high_watermark) {
      p.status = absl::OutOfRangeError("scan of partition " + std::to_string(p.partition) + " of " +
                                       topic + " from offset " + std::to_string(p.start_offset) +
                                       ": beyond its end " + std::to_string(p.high_watermark) +
                                       " (the log was truncated or the topic made again)");
      continue;
    }
    if (p.start_offset < p.log_start) {
      p.below_log_start = true;
      p.start_offset = p.log_start;
    }
    p.next_offset = p.start_offset;
    if (p.start_offset < p.high_watermark) to_read.push_back(&p);
  }
  ConsumeRound round{rk_, topic, agent_id, limits.max_bytes, deadline};
  ConsumePartitions(round, to_read, &result.bytes);
  return result;
}

}  // namespace kspool::agent
