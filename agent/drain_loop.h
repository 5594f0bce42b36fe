// DrainLoop: moves WAL entries to Kafka and settles them when Kafka acknowledges.
//
// It reads the WAL in sequence order into a bounded window (messages and bytes: memory
// does not grow with the backlog), produces each entry, and on a successful delivery
// report removes it from the WAL in batched Settle() calls. A failed delivery is never
// discarded here: the entry stays in the window and the WAL and is produced again
// after an exponential backoff. A producer that hit a fatal error is replaced and its
// entries are produced again. Stop() gives in-flight messages a grace period, then
// leaves whatever is unacknowledged in the WAL.
// Thread safety: Start/Stop from one owner thread; Notify() and inflight() from any.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <thread>

#include "wal/mutex.h"
#include "agent/commit_tracker.h"
#include "agent/kafka_producer.h"
#include "wal/clock.h"
#include "wal/wal.h"

namespace kspool::agent {

struct DrainOptions {
  uint64_t max_inflight_messages = 100000;
  uint64_t max_inflight_bytes = 64ull << 20;
  uint64_t retry_backoff_ms = 100;
  uint64_t retry_backoff_max_ms = 5000;
  uint64_t commit_point_interval_ms = 100;
  uint64_t shutdown_grace_ms = 5000;
  Clock* clock = SystemClock::Default();
};

using ProducerFactory = std::function<absl::StatusOr<std::unique_ptr<KafkaProducer>>()>;

class DrainLoop {
 public:
  DrainLoop(wal::Wal* wal, CommitTracker* tracker, ProducerFactory factory, DrainOptions options);
  ~DrainLoop();

  [[nodiscard]] absl::Status Start();
  // Wakes the loop: new entries were appended.
  void Notify();
  void Stop();

  uint64_t inflight() const { return inflight_.load(); }
  uint64_t redelivered() const { return redelivered_.load(); }

 private:
  struct Slot {
    wal::Entry entry;
    enum State { kToProduce, kInKafka, kBackoff, kAcked } state = kToProduce;
    int attempts = 0;
  };

  void Run();
  bool Refill();
  void ProduceDue(int64_t now_ms);
  void HandleReports(const std::vector<DeliveryReport>& reports, int64_t now_ms);
  void SettleAcked();
  void UpdateCommitPoint();
  void ReplaceProducerIfFatal();
  void DrainForShutdown();

  wal::Wal* const wal_;
  CommitTracker* const tracker_;
  const ProducerFactory factory_;
  const DrainOptions options_;
  std::unique_ptr<KafkaProducer> producer_;

  // Owned by the loop thread.
  std::map<uint64_t, Slot> window_;
  std::set<uint64_t> ready_;                        // to produce now, lowest seq first
  std::multimap<int64_t, uint64_t> backoff_;        // retry time -> seq
  uint64_t window_bytes_ = 0;
  uint64_t cursor_ = 0;  // next sequence number to read
  std::vector<wal::Outcome> acked_;
  std::set<uint64_t> undecodable_;
  int64_t next_commit_update_ms_ = 0;
  int64_t last_settle_error_log_ms_ = 0;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> inflight_{0};
  std::atomic<uint64_t> redelivered_{0};
  Mutex wake_mu_;
  CondVar wake_cv_;
  uint64_t wake_count_ ABSL_GUARDED_BY(wake_mu_) = 0;
};

}  // namespace kspool::agent
