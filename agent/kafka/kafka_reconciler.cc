// KafkaReconciler: reading a topic's partitions back for the drain (kafka_reconciler.h).
#include "agent/kafka/kafka_reconciler.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace kspool::agent {

KafkaReconciler::KafkaReconciler(ScannerFactory scanners, wal::SettledWatermarks* watermarks,
                                 PartitionCache* partitions, std::string agent_id,
                                 ReconcilerOptions options, Clock* clock,
                                 std::function<void()> on_result)
    : scanners_(std::move(scanners)),
      watermarks_(watermarks),
      partitions_(partitions),
      agent_id_(std::move(agent_id)),
      options_(options),
      clock_(clock),
      on_result_(std::move(on_result)) {
  // As they are now, before the drain settles anything: this process's own deliveries
  // raise them, and a partition must be read from where the last process left it.
  absl::StatusOr<std::vector<wal::Watermark>> all = watermarks->Watermarks();
  if (!all.ok()) {
    spdlog::warn("reconcile: the settled watermarks cannot be read ({}): partitions are read "
                 "from the receive time of their oldest waiting message",
                 all.status().ToString());
    return;
  }
  for (const wal::Watermark& w : *all) marks_[w.topic][w.partition] = w.offset;
}

KafkaReconciler::~KafkaReconciler() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  for (std::thread& t : threads_) t.join();
}

void KafkaReconciler::Reconcile(const std::string& topic, int64_t oldest_receive_ms) {
  Job job;
  job.topic = topic;
  job.oldest_receive_ms = oldest_receive_ms;
  Enqueue(std::move(job));
}

void KafkaReconciler::ReconcileAgain(const std::string& topic, int64_t oldest_receive_ms,
                                     uint64_t round) {
  Job job;
  job.topic = topic;
  job.round = round;
  job.oldest_receive_ms = oldest_receive_ms;
  Enqueue(std::move(job));
}

void KafkaReconciler::Enqueue(Job job) {
  job.asked_ms = job.due_ms = clock_->MonotonicMillis();
  {
    MutexLock l(&mu_);
    // A newer round of a topic supersedes one still queued: the drain takes releases
    // only from its newest round, and the newer one reads from the watermarks as they
    // are when it begins, from the older one's oldest receive time on, so it covers
    // what the older one would have read. Without this, rounds pile up behind the
    // workers and each reads the topic again for nothing.
    if (job.round > 0) {
      for (Job& queued : jobs_) {
        if (queued.topic != job.topic || queued.round == 0) continue;
        job.oldest_receive_ms = std::min(job.oldest_receive_ms, queued.oldest_receive_ms);
        job.asked_ms = std::min(job.asked_ms, queued.asked_ms);  // its max_hold counts from the first
        spdlog::debug("reconcile: topic '{}': round {} replaces queued round {}", job.topic,
                      job.round, queued.round);
        queued = std::move(job);
        return;  // a worker is already due to take it
      }
    }
    jobs_.push_back(std::move(job));
    // Threads are started by the first request: an agent with nothing in doubt has none.
    while (threads_.size() < static_cast<size_t>(std::max(1, options_.workers)) &&
           threads_.size() < jobs_.size()) {
      threads_.emplace_back([this] { Work(); });
    }
  }
  cv_.Signal();
}

void KafkaReconciler::Poll(std::vector<ReconcileResult>* out) {
  MutexLock l(&mu_);
  for (ReconcileResult& r : ready_) out->push_back(std::move(r));
  ready_.clear();
}

void KafkaReconciler::Publish(std::vector<ReconcileResult> results) {
  if (results.empty()) return;
  {
    MutexLock l(&mu_);
    for (ReconcileResult& r : results) ready_.push_back(std::move(r));
  }
  if (on_result_) on_result_();
}

void KafkaReconciler::Work() {
  pthread_setname_np(pthread_self(), "kspool-reconcile");
  std::unique_ptr<PartitionScanner> scanner;
  while (true) {
    Job job;
    {
      MutexLock l(&mu_);
      while (!stop_) {
        const int64_t now = clock_->MonotonicMillis();
        auto due = std::min_element(jobs_.begin(), jobs_.end(),
                                    [](const Job& a, const Job& b) { return a.due_ms < b.due_ms; });
        if (due != jobs_.end() && due->due_ms <= now) {
          job = std::move(*due);
          jobs_.erase(due);
          break;
        }
        cv_.WaitFor(&mu_, std::chrono::milliseconds(
                              due == jobs_.end() ? 1000 : std::max<int64_t>(1, due->due_ms - now)));
      }
      if (stop_) return;
    }
    if (!scanner) {
      absl::StatusOr<std::unique_ptr<PartitionScanner>> s = scanners_();
      if (!s.ok()) {
        spdlog::error("reconcile: cannot make a Kafka reader: {}; topic '{}' is not reconciled",
                      s.status().ToString(), job.topic);
        ReconcileResult r;
        r.topic = job.topic;
        r.round = job.round;
        r.all_released = true;
        r.ended_early = "unreadable";
        Publish({std::move(r)});
        continue;
      }
      scanner = std::move(s).value();
    }
    if (Try(scanner.get(), job)) {
      uint64_t backoff = static_cast<uint64_t>(options_.retry_backoff_ms);
      for (int i = 1; i < job.failures && backoff < uint64_t(options_.retry_backoff_max_ms); ++i) {
        backoff *= 2;
      }
      job.due_ms = clock_->MonotonicMillis() +
                   std::min<int64_t>(static_cast<int64_t>(backoff), options_.retry_backoff_max_ms);
      MutexLock l(&mu_);
      jobs_.push_back(std::move(job));
    }
  }
}

bool KafkaReconciler::Try(PartitionScanner* scanner, Job& job) {
  const int64_t started = clock_->MonotonicMillis();
  auto give_up = [&](const std::string& reason) {
    ReconcileResult r;
    r.topic = job.topic;
    r.round = job.round;
    r.released = job.pending;
    r.all_released = true;
    r.ended_early = reason;
    Publish({std::move(r)});
    return false;
  };
  if (started - job.asked_ms >= options_.max_hold_ms) return give_up("max_hold");
  ++job.failures;
  std::shared_ptr<const TopicLayout> layout = partitions_->Get(job.topic);
  if (absl::IsNotFound(layout->status)) return give_up("topic_missing");
  if (!job.known) {
    if (layout->partition_count() == 0) return true;  // not known yet: try again
    for (int32_t p = 0; p < layout->partition_count(); ++p) job.pending.push_back(p);
    job.known = true;
  }
  if (job.round > 0 && !job.marks) {
    // Read now, after the drain began holding them for the partitions it waits for.
    absl::StatusOr<std::vector<wal::Watermark>> now = watermarks_->WatermarksOf(job.topic);
    if (!now.ok()) {
      spdlog::warn(
          "reconcile: the settled watermarks of topic '{}' cannot be read ({}): its "
          "partitions are read from the receive time of its oldest waiting message",
          job.topic, now.status().ToString());
    }
    job.marks.emplace();
    for (const wal::Watermark& w : now.ok() ? *now : std::vector<wal::Watermark>{}) {
      (*job.marks)[w.partition] = w.offset;
    }
  }
  static const std::map<int32_t, int64_t> kNone;
  auto known = marks_.find(job.topic);
  const std::map<int32_t, int64_t>& marks = job.marks               ? *job.marks
                                            : known == marks_.end() ? kNone
                                                                    : known->second;
  std::vector<ScanStart> starts;
  for (int32_t p : job.pending) {
    if (!layout->HasLeader(p)) continue;  // read when it has one; others go on meanwhile
    auto m = marks.find(p);
    const bool by_time = m == marks.end() || std::count(job.from_time.begin(), job.from_time.end(), p);
    starts.push_back(by_time ? ScanStart::AtTime(p, job.oldest_receive_ms - options_.time_margin_ms)
                             : ScanStart::AtOffset(p, m->second + 1));
  }
  if (starts.empty()) return true;
  ScanLimits limits;
  limits.max_bytes = options_.max_bytes_per_partition * starts.size();
  limits.time_budget_ms = options_.scan_budget_ms;
  absl::StatusOr<TopicScan> scan = scanner->ScanTopic(job.topic, starts, limits, agent_id_);
  const double seconds = (clock_->MonotonicMillis() - started) / 1000.0;
  if (!scan.ok()) {
    if (absl::IsNotFound(scan.status())) return give_up("topic_missing");
    spdlog::warn("reconcile: topic '{}' cannot be read back yet (try {}): {}", job.topic,
                 job.failures, scan.status().ToString());
    return true;
  }
  // One result per way a partition ended: a copy always comes with its partition's release.
  std::map<std::string, ReconcileResult> by_reason;
  std::vector<int32_t> still;
  for (const PartitionScan& ps : scan->partitions) {
    spdlog::debug("reconcile: topic '{}' partition {}: offsets {}..{} (log start {}), {} records "
                  "read, {} ours, end {}: {}",
                  job.topic, ps.partition, ps.start_offset, ps.high_watermark, ps.log_start,
                  ps.records, ps.found.size(), ScanEndName(ps.end), ps.status.ToString());
    std::string reason;
    if (ps.status.ok()) {
      if (ps.end == ScanEnd::kByteBound) reason = "max_bytes";
      if (ps.end == ScanEnd::kTimeBudget) reason = "time_budget";
    } else if (absl::IsOutOfRange(ps.status) &&
               !std::count(job.from_time.begin(), job.from_time.end(), ps.partition)) {
      job.from_time.push_back(ps.partition);  // watermark beyond the end: read by time now
      still.push_back(ps.partition);
      continue;
    } else if (absl::IsUnavailable(ps.status)) {
      still.push_back(ps.partition);  // no leader, or its offsets not known in time
      continue;
    } else {
      reason = absl::IsNotFound(ps.status) ? "partition_missing" : "unreadable";
      spdlog::warn("reconcile: topic '{}' partition {}: {}", job.topic, ps.partition,
                   ps.status.ToString());
    }
    ReconcileResult& r = by_reason[reason];
    r.topic = job.topic;
    r.ended_early = reason;
    r.released.push_back(ps.partition);
    for (const FoundRecord& f : ps.found) r.found.push_back({f.seq, ps.partition, f.offset});
  }
  for (int32_t p : job.pending) {
    const bool read = std::any_of(starts.begin(), starts.end(),
                                  [&](const ScanStart& s) { return s.partition == p; });
    if (!read) still.push_back(p);
  }
  job.pending = still;
  std::vector<ReconcileResult> results;
  for (auto& [reason, r] : by_reason) results.push_back(std::move(r));
  if (results.empty()) results.emplace_back().topic = job.topic;
  for (ReconcileResult& r : results) r.round = job.round;
  results.front().bytes_read = scan->bytes;
  results.front().seconds = seconds;
  results.back().all_released = job.pending.empty();
  size_t found = 0;
  for (const ReconcileResult& r : results) found += r.found.size();
  spdlog::info("reconcile: topic '{}': read {} partition(s), {} bytes in {:.3f} s; {} copies "
               "found; {} partition(s) left",
               job.topic, starts.size(), scan->bytes, seconds, found, job.pending.size());
  Publish(std::move(results));
  if (job.pending.empty()) return false;
  if (still.size() < starts.size()) job.failures = 0;  // progress: no growing backoff
  return true;
}

}  // namespace kspool::agent
