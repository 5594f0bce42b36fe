#include "agent/kafka/kafka_scan_consume.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "agent/kafka/kafka_scan_record.h"

namespace kspool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kMaxPollMs = 100;
constexpr size_t kBatch = 1024;
// Times a partition whose log start passed its read position goes on from the new start.
constexpr int kMaxRestarts = 3;

class Round {
 public:
  Round(const ConsumeRound& r, const std::vector<PartitionScan*>& parts, uint64_t* total)
      : r_(r), total_(total) {
    rkt_ = rd_kafka_topic_new(r_.rk, r_.topic.c_str(), nullptr);
    queue_ = rd_kafka_queue_new(r_.rk);
    for (PartitionScan* p : parts) {
      if (rd_kafka_consume_start_queue(rkt_, p->partition, p->start_offset, queue_) != 0) {
        p->status = PartitionErrorStatus(rd_kafka_last_error(), Name(*p) + ": cannot read it");
        continue;
      }
      live_[p->partition] = {p, 0};
    }
    active_ = live_.size();
  }

  ~Round() {
    for (const auto& [partition, l] : live_) rd_kafka_consume_stop(rkt_, partition);
    rd_kafka_message_t* msgs[kBatch];
    for (ssize_t n; (n = rd_kafka_consume_batch_queue(queue_, 0, msgs, kBatch)) > 0;) {
      for (ssize_t i = 0; i < n; ++i) rd_kafka_message_destroy(msgs[i]);
    }
    rd_kafka_queue_destroy(queue_);
    rd_kafka_topic_destroy(rkt_);
  }

  void Run() {
    rd_kafka_message_t* msgs[kBatch];
    while (active_ > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(r_.deadline - SteadyClock::now())
              .count();
      if (left <= 0) return StopAll(ScanEnd::kTimeBudget);
      const ssize_t n = rd_kafka_consume_batch_queue(
          queue_, static_cast<int>(std::min<int64_t>(left, kMaxPollMs)), msgs, kBatch);
      rd_kafka_poll(r_.rk, 0);  // the handle's own events (errors, logs queued)
      for (ssize_t i = 0; i < n; ++i) {
        if (active_ > 0) Handle(msgs[i]);
        rd_kafka_message_destroy(msgs[i]);
      }
    }
  }

 private:
  struct Live {
    PartitionScan* scan = nullptr;
    int restarts = 0;
    bool done = false;
  };

  std::string Name(const PartitionScan& p) const {
    return "partition " + std::to_string(p.partition) + " of topic " + r_.topic;
  }

  void Finish(Live* l, ScanEnd end) {
    if (l->done) return;
    l->done = true;
    l->scan->end = end;
    if (end == ScanEnd::kReachedEnd && l->scan->status.ok()) {
      l->scan->next_offset = l->scan->high_watermark;
    }
    --active_;
  }

  void StopAll(ScanEnd end) {
    for (auto& [partition, l] : live_) Finish(&l, end);
  }

  void Fail(Live* l, absl::Status status) {
    l->scan->status = std::move(status);
    Finish(l, ScanEnd::kReachedEnd);
  }

  void Handle(const rd_kafka_message_t* m) {
    auto it = live_.find(m->partition);
    if (it == live_.end() || it->second.done) return;
    Live& l = it->second;
    PartitionScan& p = *l.scan;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (m->offset >= p.high_watermark) Finish(&l, ScanEnd::kReachedEnd);
      return;
    }
    if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) return Restart(&l);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const absl::Status s =
          PartitionErrorStatus(m->err, Name(p) + ": " + rd_kafka_message_errstr(m));
      // librdkafka goes on fetching after a transient error; the budget bounds it.
      if (absl::IsUnavailable(s)) {
        spdlog::debug("kafka scan: {}", std::string(s.message()));
      } else {
        Fail(&l, s);
      }
      return;
    }
    if (m->offset >= p.high_watermark) return Finish(&l, ScanEnd::kReachedEnd);
    const RecordMark mark = MarkRecord(m, r_.agent_id);
    const uint64_t bytes = m->len + m->key_len + mark.header_bytes;
    ++p.records;
    p.bytes += bytes;
    *total_ += bytes;
    p.last_offset = m->offset;
    p.next_offset = m->offset + 1;
    if (mark.owner == RecordOwner::kOurs) p.found.push_back({mark.seq, m->offset});
    if (mark.owner == RecordOwner::kOursMalformedSeq) ++p.malformed;
    if (p.next_offset >= p.high_watermark) Finish(&l, ScanEnd::kReachedEnd);
    if (*total_ >= r_.max_bytes) StopAll(ScanEnd::kByteBound);
  }

  // Fetching at next_offset was out of range: retention deleted it meanwhile (then the
  // scan goes on from the new log start), or the log is shorter than it was.
  void Restart(Live* l) {
    PartitionScan& p = *l->scan;
    int64_t low = -1, high = -1;
    const int left = static_cast<int>(std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(r_.deadline - SteadyClock::now())
               .count()));
    const rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(r_.rk, r_.topic.c_str(), p.partition, &low, &high, left);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Fail(l,
                  PartitionErrorStatus(err, Name(p) + ": offset " + std::to_string(p.next_offset) +
                                                " out of range, and its offsets unknown"));
    }
    if (low <= p.next_offset || l->restarts >= kMaxRestarts) {
      return Fail(l, absl::OutOfRangeError(Name(p) + ": offset " + std::to_string(p.next_offset) +
                                           " out of range of " + std::to_string(low) + ".." +
                                           std::to_string(high) +
                                           " (the log was truncated or the topic made again)"));
    }
    ++l->restarts;
    p.below_log_start = true;
    p.log_start = low;
    rd_kafka_consume_stop(rkt_, p.partition);
    p.next_offset = std::min(low, p.high_watermark);
    if (p.next_offset >= p.high_watermark) {
      live_.erase(p.partition);
      --active_;
      p.end = ScanEnd::kReachedEnd;
      return;
    }
    if (rd_kafka_consume_start_queue(rkt_, p.partition, p.next_offset, queue_) != 0) {
      const absl::Status s = PartitionErrorStatus(rd_kafka_last_error(), Name(p) + ": restart");
      live_.erase(p.partition);
      --active_;
      p.status = s;
    }
  }

  const ConsumeRound& r_;
  uint64_t* total_;
  rd_kafka_topic_t* rkt_ = nullptr;
  rd_kafka_queue_t* queue_ = nullptr;
  std::unordered_map<int32_t, Live> live_;  // started and not stopped
  size_t active_ = 0;                       // live and not done
};

}  // namespace

absl::Status PartitionErrorStatus(rd_kafka_resp_err_t err, const std::string& what) {
  const std::string text = what + ": " + rd_kafka_err2str(err);
  switch (err) {
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return absl::NotFoundError(text);
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
      return absl::PermissionDeniedError(text);
    default:
      return absl::UnavailableError(text);
  }
}

void ConsumePartitions(const ConsumeRound& round, const std::vector<PartitionScan*>& parts,
                       uint64_t* total_bytes) {
  if (parts.empty()) return;
  Round r(round, parts, total_bytes);
  r.Run();
}

}  // namespace kspool::agent
