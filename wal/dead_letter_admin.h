// wal::DeadLetterAdmin: the operator's writes to the dead letters (kspoolctl dead
// replay / purge): move them back into the log to be delivered again, or delete them.
// Reading them is Inspection::ScanDeadLetters.
//
// Both are all-or-nothing, in one synced write batch, and keep the ledger
// accepted = delivered + discarded + pending. Thread safety: every method may be called
// from any thread. Ownership: borrowed from the owner of the wal::Wal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kspool::wal {

// A dead letter moved back into the log by ReplayDeadLetters().
struct ReplayedEntry {
  uint64_t dead_seq = 0;  // its sequence number as a dead letter (when first accepted)
  uint64_t seq = 0;       // its new sequence number in the log
  std::string topic;
  int64_t receive_time_ms = 0;  // its new receive time
};

class DeadLetterAdmin {
 public:
  virtual ~DeadLetterAdmin() = default;

  // Moves the dead letters `seqs` back into the log, in sequence order, under new
  // sequence numbers and one new receive time, so that an agent delivers them again.
  // One synced write batch appends them, deletes them from the dead letters and counts
  // them as accepted again (the ledger accepted = delivered + discarded + pending keeps
  // holding; their discard stays counted). All or nothing: NOT_FOUND if one is not a
  // dead letter, FAILED_PRECONDITION if one does not hold a decodable record (a
  // `corrupt` one cannot be replayed, only purged). Waits for group commits in flight.
  [[nodiscard]] virtual absl::StatusOr<std::vector<ReplayedEntry>> ReplayDeadLetters(
      const std::vector<uint64_t>& seqs) = 0;
  // Deletes the dead letters `seqs` in one synced batch; the counters keep their
  // discard. All or nothing: NOT_FOUND if one is not a dead letter.
  [[nodiscard]] virtual absl::Status PurgeDeadLetters(const std::vector<uint64_t>& seqs) = 0;
};

}  // namespace kspool::wal
