// DrainLoop: moves WAL entries to Kafka and settles them when Kafka has answered.
//
// It reads the WAL in sequence order into a bounded window (messages and bytes: memory
// does not grow with the backlog) and produces each entry. A successful delivery
// report removes the entry from the WAL (batched Settle() calls). A transient error
// never discards: the entry stays in the window and the WAL and is produced again
// after an exponential backoff. A permanent error (kafka_errors.h), an unknown topic
// confirmed by fresh metadata `unknown_topic_checks` times, an entry older than
// `max_message_age_ms`, or an undecodable entry is discarded: moved to the dead letters
// with its reason, in the same WAL batch that counts it. After a WAL write error the
// loop reopens the WAL periodically and then re-reads it from the head.
// A producer that hit a fatal error is replaced. Stop() gives in-flight messages a
// grace period and leaves whatever is unacknowledged in the WAL.
// Thread safety: Start/Stop from one owner thread; Notify() and the counters from any.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "agent/commit_tracker.h"
#include "agent/kafka_producer.h"
#include "agent/metrics.h"
#include "wal/clock.h"
#include "wal/mutex.h"
#include "wal/wal.h"

namespace kspool::agent {

struct DrainOptions {
  uint64_t max_inflight_messages = 100000;
  uint64_t max_inflight_bytes = 32ull << 20;
  uint64_t retry_backoff_ms = 100;
  uint64_t retry_backoff_max_ms = 5000;
  uint64_t commit_point_interval_ms = 100;
  uint64_t shutdown_grace_ms = 5000;
  uint64_t max_message_age_ms = 0;  // 0: never expire
  uint64_t unknown_topic_checks = 3;
  uint64_t wal_reopen_interval_ms = 1000;
  uint64_t settle_delay_ms = 50;     // how long an out-of-order finished entry waits
  uint64_t settle_interval_ms = 5;   // least time between two Settle() calls
  Clock* clock = SystemClock::Default();
  Metrics* metrics = nullptr;  // optional
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
  uint64_t discarded() const { return discarded_.load(); }
  // Agent clock time of the last successful delivery report (0: none yet).
  int64_t last_delivery_ms() const { return last_delivery_ms_.load(); }
  int brokers_up() const { return brokers_up_.load(); }

 private:
  struct Slot {
    wal::Entry entry;
    enum State { kReady, kInKafka, kBackoff, kSettling } state = kReady;
    int attempts = 0;
    int topic_checks = 0;  // fresh-metadata confirmations that the topic is missing
    wal::Outcome outcome;  // set with kSettling
    int64_t finished_ms = 0;
    bool batched = false;  // part of the Settle() call being made
  };
  struct TopicCheck {
    int64_t at_ms = 0;
    absl::StatusOr<int> partitions = 0;
  };

  void Run();
  bool Refill();
  void ProduceDue(int64_t now_ms);
  void HandleReports(const std::vector<DeliveryReport>& reports, int64_t now_ms);
  void Retry(uint64_t seq, Slot& slot, const std::string& error, int64_t now_ms);
  void Enqueue(uint64_t seq, const Slot& slot);
  void Discard(uint64_t seq, Slot& slot, const std::string& reason, const std::string& error);
  bool Expired(const Slot& slot, int64_t now_ms) const;
  // True once fresh metadata says the slot's topic (or explicit partition) is missing.
  bool TargetMissing(const Slot& slot, int64_t now_ms, std::string* why);
  void Finish(uint64_t seq, Slot& slot, wal::Outcome outcome, int64_t now_ms);
  // Settles what is due; everything finished when `all`.
  void SettleFinished(int64_t now_ms, bool all);
  void UpdateCommitPoint();
  void MaybeReopenWal(int64_t now_ms);
  void ReplaceProducerIfFatal();
  void Degraded(const char* event) {
    if (options_.metrics) options_.metrics->Degraded(event);
  }
  void DrainForShutdown();

  wal::Wal* const wal_;
  CommitTracker* const tracker_;
  const ProducerFactory factory_;
  const DrainOptions options_;
  std::unique_ptr<KafkaProducer> producer_;

  // Owned by the loop thread.
  std::map<uint64_t, Slot> window_;
  // Per topic: what to produce, and what waits for a retry. While a topic has entries
  // waiting, none of its newer entries are produced either, and all of them go out
  // again together, in sequence order, so a retry never reorders a partition.
  struct TopicQueue {
    std::deque<uint64_t> ready;  // sorted, lowest seq first
    std::set<uint64_t> waiting;  // failed, until retry_at_ms
    int64_t retry_at_ms = 0;
    int failures = 0;  // consecutive failed rounds, for the backoff
  };
  std::map<std::string, TopicQueue> queues_;
  uint64_t window_bytes_ = 0;
  uint64_t cursor_ = 0;  // next sequence number to read
  uint64_t wal_reopens_seen_ = 0;
  uint64_t replay_below_ = 0;  // entries below were in the WAL at start: maybe produced before
  // Finished (delivered or discarded) entries wait in the window until they can leave
  // the WAL cheaply: the finished prefix of the window goes out as one range delete;
  // entries finished out of order wait up to settle_delay_ms for the prefix to reach
  // them, then go out one by one. `finished_` lists them in finishing order.
  std::deque<uint64_t> finished_;
  int64_t next_settle_ms_ = 0;
  std::map<std::string, TopicCheck> topic_checks_;
  int64_t next_commit_update_ms_ = 0;
  int64_t next_reopen_ms_ = 0;
  int64_t last_settle_error_log_ms_ = 0;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> inflight_{0};
  std::atomic<uint64_t> redelivered_{0};
  std::atomic<uint64_t> discarded_{0};
  std::atomic<int64_t> last_delivery_ms_{0};
  std::atomic<int> brokers_up_{-1};
  Mutex wake_mu_;
  CondVar wake_cv_;
  uint64_t wake_count_ ABSL_GUARDED_BY(wake_mu_) = 0;
};

}  // namespace kspool::agent
