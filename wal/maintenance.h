// wal::Maintenance: the WAL's housekeeping, run periodically by the agent
// (agent/background/wal_maintenance.h): bounds on the dead letters, the tracked topics
// and the delivery index, and compaction of the settled range.
//
// Every call does a bounded amount of work and writes nothing when there is nothing to
// do, so an idle WAL costs no write. Thread safety: every method may be called from any
// thread. Ownership: borrowed from the owner of the wal::Wal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/log_status.h"
#include "wal/stats.h"

namespace kspool::wal {

// What one TrimDeadLetters() removed, by the limit that removed it.
struct DeadLetterTrim {
  Counts by_size;
  Counts by_age;
  bool more = false;  // stopped at the per-call bound with more to remove: call again
};

// What one TrimDeliveries() removed.
struct DeliveryTrim {
  uint64_t messages = 0;  // outcomes forgotten
  uint64_t bytes = 0;     // stored bytes freed
  bool more = false;      // stopped at the per-call bound with more to remove
};

class Maintenance : public virtual LogStatus {
 public:
  ~Maintenance() override = default;

  // Removes the oldest dead letters (in sequence order) while their bytes exceed
  // Options::max_dead_letter_bytes, then those discarded longer than
  // Options::max_dead_letter_age_ms ago, stopping at the first younger one. Counts
  // them per topic under `dead_dropped` in the same atomic batch (unsynced: a crash may
  // bring them back, counted as before). Removes at most a bounded amount per call.
  [[nodiscard]] virtual absl::StatusOr<DeadLetterTrim> TrimDeadLetters() = 0;
  // Forgets the oldest outcomes of the delivery index (whole runs, in sequence order)
  // while the index's bytes exceed Options::delivery_retention_bytes, then those below
  // the oldest live entry released at least Options::delivery_retention_ms ago (by the
  // Clock; released: it and every outcome below it known), stopping at the first other
  // one; raises the floor past them in the same batch, not synced: a crash may
  // bring them back, with the totals and floor as before. At most 65,536 runs per call
  // (DeliveryTrim::more: call again). Waits for a Settle() in progress.
  [[nodiscard]] virtual absl::StatusOr<DeliveryTrim> TrimDeliveries() = 0;
  // Stops tracking the topics idle for Options::topic_idle_forget_ms (nothing live, no
  // append), and beyond Options::max_tracked_topics the longest idle with nothing live:
  // their saved commit points are deleted, SaveCommitPoints() ignores them from then
  // on, and future receive times stay above their last points. Their counters stay.
  // Returns the topics forgotten.
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> ForgetIdleTopics() = 0;
  // Compacts away the dead range below the oldest live entry. A failure for space, or
  // RocksDB's refusal after one (CompactionTooLarge: it keeps refusing until the volume
  // has room it may never get), is a write error: health() fails until Reopen().
  [[nodiscard]] virtual absl::Status CompactDeadRange() = 0;
  // Makes the reserve again (open_reserve.h) if it is missing and the volume has twice
  // its size free; appends are accepted again from then. True when it was
  // made by this call. Cheap when there is nothing to do (no I/O while it is held).
  virtual bool RestoreReserve() = 0;
};

}  // namespace kspool::wal
