// KafkaReconciler: the drain's Reconciler (agent/drain/reconciler.h) on PartitionScanner.
// For each topic the drain asks about, it reads every partition back on its own threads
// and answers which in-doubt entries Kafka holds, so the drain never waits on a read.
//
// Where a partition is read from: its settled watermark + 1 (wal/settled_watermarks.h) as
// it was at start (this process's own deliveries raise it), or for ReconcileAgain as it
// is when the read begins;
// one beyond the partition's end (the scanner's OUT_OF_RANGE: a topic recreated) or none
// at all: the first record at or after the oldest in-doubt entry's receive time minus
// `time_margin_ms` (Kafka's timestamps are the producer's create time, which kspool sets
// from the message or its receive time; the margin covers clock skew between this host
// and the brokers and messages sent with an older timestamp). Never from the beginning
// of a topic.
//
// Bounds, each ending a partition's read early (the drain is told why; the entries not
// found are produced: a duplicate possible, a loss never): max_bytes_per_partition
// ("max_bytes"; one read of a topic may read that much times its partitions, pooled),
// scan_budget_ms per read ("time_budget"). A partition without a leader, or a topic
// whose metadata is not known yet, is tried again with an exponential backoff (only
// that partition waits), until max_hold_ms after the request; the drain ends its hold
// then in any case. A topic Kafka does not have is released at once ("topic_missing").
// Topics are served by `workers` threads, each with its own scanner, in the order asked,
// so a slow topic holds back at most one worker. A ReconcileAgain for a topic whose
// earlier round is still queued replaces that round (it reads from the watermarks as
// they are then, covering the older round's reads).
// Thread safety: Reconcile() and Poll() from the drain's thread; the rest is internal.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/drain/partition_cache.h"
#include "agent/drain/reconciler.h"
#include "agent/kafka/kafka_partition_scanner.h"
#include "agent/kafka/reconciler_options.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "wal/settled_watermarks.h"

namespace kspool::agent {

class KafkaReconciler final : public Reconciler {
 public:
  using ScannerFactory = std::function<absl::StatusOr<std::unique_ptr<PartitionScanner>>()>;
  // `watermarks` are read here, once: make it before the drain settles anything.
  // `on_result` is called (from a worker) when results are ready: wake the drain.
  KafkaReconciler(ScannerFactory scanners, wal::SettledWatermarks* watermarks,
                  PartitionCache* partitions, std::string agent_id, ReconcilerOptions options,
                  Clock* clock, std::function<void()> on_result);
  ~KafkaReconciler() override;

  void Reconcile(const std::string& topic, int64_t oldest_receive_ms) override;
  void ReconcileAgain(const std::string& topic, int64_t oldest_receive_ms, uint64_t round) override;
  void Poll(std::vector<ReconcileResult>* out) override;

 private:
  struct Job {
    std::string topic;
    uint64_t round = 0;  // > 0: ReconcileAgain, from the watermarks of its first try
    std::optional<std::map<int32_t, int64_t>> marks;
    int64_t oldest_receive_ms = 0;
    int64_t asked_ms = 0;    // monotonic
    int64_t due_ms = 0;      // monotonic: not before
    int failures = 0;        // tries in a row that left partitions unread, for the backoff
    bool known = false;      // `pending` holds the topic's partitions
    std::vector<int32_t> pending;          // partitions not released yet
    std::vector<int32_t> from_time;        // partitions whose watermark was beyond the end
  };
  void Work();
  // One try: reads what it can of the job's pending partitions, publishes the results;
  // false when nothing is left to do for the job.
  bool Try(PartitionScanner* scanner, Job& job);
  void Publish(std::vector<ReconcileResult> results);
  void Enqueue(Job job);

  const ScannerFactory scanners_;
  wal::SettledWatermarks* const watermarks_;
  // The settled watermarks when the agent started, per topic and partition.
  std::map<std::string, std::map<int32_t, int64_t>> marks_;
  PartitionCache* const partitions_;
  const std::string agent_id_;
  const ReconcilerOptions options_;
  Clock* const clock_;
  const std::function<void()> on_result_;

  Mutex mu_;
  CondVar cv_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<ReconcileResult> ready_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace kspool::agent
