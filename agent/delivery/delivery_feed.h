// DeliveryFeed: serves WatchDeliveries. Each watcher has a position in sequence order;
// one thread reads the WAL's delivery index (Wal::ScanDeliveries, which stops at the
// WAL's head, below which every entry is settled) from each watcher's position and
// hands it a batch, then reads for it again only once the watcher says it has written
// the batch (Ready) — so a slow reader holds back only itself, and memory per watcher
// is one batch. A caught-up watcher is read again when Notify() says outcomes were
// settled. RocksDB is read on the feed's own thread, never on gRPC's or the drain's.
// Thread safety: every method may be called from any thread. Sinks are called on the
// feed's thread, outside its lock; the feed shares ownership of each sink, so a sink
// must cope with a call that races with its watcher's Remove().
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "base/mutex.h"
#include "wal/delivery_queries.h"

namespace kspool::agent {

class DeliveryFeed {
 public:
  // The receiving end of one watcher (a WatchDeliveries call).
  class Sink {
   public:
    virtual ~Sink() = default;
    // Outcomes in sequence order, continuing the last batch; no more come until Ready().
    virtual void Deliver(std::vector<wal::Outcome> batch) = 0;
    // The feed ends for this watcher: OUT_OF_RANGE (its position is forgotten),
    // UNAVAILABLE (the WAL failed, or the agent stops). The watcher is removed.
    virtual void End(absl::Status status) = 0;
  };

  static constexpr size_t kBatch = 512;

  explicit DeliveryFeed(wal::DeliveryQueries* wal);
  // Stops the thread and ends every watcher left with UNAVAILABLE.
  ~DeliveryFeed();
  void Start();
  // The agent stops: ends every watcher with UNAVAILABLE, and each one added later at once.
  void Close();

  // A watcher from `from_seq` on; it is read for at once.
  [[nodiscard]] uint64_t Add(uint64_t from_seq, std::shared_ptr<Sink> sink);
  // The watcher has written its last batch and wants more.
  void Ready(uint64_t id);
  // Forgets the watcher (a call already under way may still reach its sink).
  void Remove(uint64_t id);
  // Outcomes were settled: caught-up watchers may have more to read.
  void Notify();

  size_t watchers() const;

 private:
  struct Watcher {
    std::shared_ptr<Sink> sink;
    uint64_t position = 0;
    bool ready = true;             // not busy writing a batch
    uint64_t read_generation = 0;  // generation_ when last found caught up
  };
  void Run();
  // Reads for watcher `id` and calls its sink; mu_ is released meanwhile.
  void Serve(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  wal::DeliveryQueries* const wal_;
  mutable Mutex mu_;
  CondVar wake_;
  std::map<uint64_t, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<size_t> count_{0};  // Notify's fast path
  std::thread thread_;
};

}  // namespace kspool::agent
