// WalMaintenance: the WAL's periodic housekeeping (wal::Maintenance), on its own
// thread, once a second: removes dead letters beyond their limits (TrimDeadLetters),
// forgets topics idle for --topic-idle-forget (ForgetIdleTopics), forgets outcomes
// beyond --delivery-retention(-bytes) (TrimDeliveries), and reports when the discard
// report's after table had to be coarsened, and makes the WAL's reserve again once the
// volume has room (RestoreReserve; warns when it goes missing and when it is back:
// Sends are refused meanwhile; compacts the delivered range as the drain settles, which
// is what frees the space, until what was written while it was missing is delivered). Each removal
// is logged as a warning and shows in the metrics (kspool_dead_letters_dropped_total,
// kspool_topics_forgotten_total, kspool_report_coarsenings_total). Nothing here writes while there
// is nothing to do: an idle agent costs no fsync. Thread safety: Start/Stop from the owner; RunOnce
// from one thread at a time.
#pragma once

#include <chrono>

#include "agent/stats/metrics.h"
#include "base/periodic_thread.h"
#include "wal/maintenance.h"

namespace kspool::agent {

class WalMaintenance {
 public:
  WalMaintenance(wal::Maintenance* wal, Metrics* metrics,
                 std::chrono::milliseconds interval = std::chrono::seconds(1))
      : wal_(wal), metrics_(metrics), interval_(interval) {}
  ~WalMaintenance() { Stop(); }

  void Start();
  void Stop();
  // One round (the thread's, and tests').
  void RunOnce();

 private:
  void TrimDeadLetters();
  void TrimDeliveries();
  void ForgetIdleTopics();
  void RestoreReserve();
  void Degraded(const char* event) {
    if (metrics_) metrics_->Degraded(event);
  }

  wal::Maintenance* const wal_;
  Metrics* const metrics_;
  const std::chrono::milliseconds interval_;
  uint64_t coarsenings_seen_ = 0;      // owned by the round's thread
  uint64_t tallies_restarted_seen_ = 0;  // owned by the round's thread
  bool reserve_missing_seen_ = false;  // likewise
  uint64_t compacted_below_ = 0;       // likewise: the head at the last CompactDeadRange
  uint64_t reclaim_until_ = 0;         // likewise: the next seq while the reserve was last missing
  PeriodicThread thread_;
};

}  // namespace kspool::agent
