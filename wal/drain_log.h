// wal::DrainLog: the drain's side of the WAL: read the live entries in order, settle
// them with their outcomes, and recover from a write error.
//
// Contract:
//  * Settle() removes entries and updates the persisted counters (and the dead-letter
//    store, for discards) in one atomic, synced write batch. It is idempotent: an
//    outcome whose sequence number is not live (below the head, settled already, or
//    never written) is ignored, neither counted nor kept as a dead letter, and so is a
//    second outcome for the same number in one call. Applying a batch again after a
//    failed sync, a Reopen() or a restart therefore changes nothing if RocksDB kept it
//    and applies it once if not: accepted = delivered + discarded + live always holds.
//  * Settle() also writes each entry's outcome into the delivery index, in the same
//    batch (no extra fsync), so that DeliveryQueries can say what became of a sequence
//    number after the entry is gone, and raises the settled watermark of each partition
//    its delivered outcomes name (settled_watermarks.h).
//  * After a write error (LogStatus::health) Settle() fails with UNAVAILABLE until
//    Reopen() succeeds.
//  * Every outcome given to Settle() is kDelivered, or kDiscarded with a reason
//    (CheckSettleable, outcome.h); else it fails with INVALID_ARGUMENT and writes nothing.
// Thread safety: every method may be called from any thread; Settle() calls are
// serialized inside. Ownership: borrowed from the owner of the wal::Wal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "wal/entry.h"
#include "wal/log_status.h"
#include "wal/outcome.h"
#include "wal/routing_bounds.h"

namespace kspool::wal {

class DrainLog : public virtual LogStatus {
 public:
  ~DrainLog() override = default;

  // For a reader that keeps a read position per topic: offers each live entry of the
  // range, in order, to `choose`, and decodes the ones it takes into *out. *next is set
  // so that every entry below it was offered (taken or skipped) and none at or above.
  // A partial scan: when reading fails part way (an error status), *out still holds
  // every entry taken before the failure and *next is one past the last entry offered
  // (where it began if none was), so the reader moves past what it took. The reader
  // owns what it took whatever the status, and must never take an entry twice: it
  // passes over entries it already holds should a range be offered again.
  [[nodiscard]] virtual absl::Status ScanChoosing(
      const ScanRange& range, const std::function<ScanChoice(const ScanCandidate&)>& choose,
      std::vector<Entry>* out, uint64_t* next) = 0;

  // Removes delivered or discarded entries; see the contract above.
  [[nodiscard]] virtual absl::Status Settle(const std::vector<Outcome>& outcomes) = 0;

  // After a write error: closes and reopens the RocksDB directory (replaying what is
  // durable) and accepts appends again if that works. A no-op while healthy. Entries
  // of a failed append may reappear below sequence numbers already scanned: a reader
  // that sees reopens() grow by one must scan again from rescan_from() (by more: from
  // the head). Below rescan_from() the log holds what it held before the failure (less
  // what was settled): the failed writes all started at or above it.
  [[nodiscard]] virtual absl::Status Reopen() = 0;
  virtual uint64_t reopens() const = 0;
  virtual uint64_t rescan_from() const = 0;

  // The routing bounds saved for `topic` (routing_bounds.h), oldest first; empty when it
  // has none. DATA_LOSS names a stored value that does not parse.
  [[nodiscard]] virtual absl::StatusOr<std::vector<RoutingBound>> RoutingBounds(
      const std::string& topic) = 0;
  // Adds `bound` as `topic`'s newest (AddRoutingBound, with the head as it is now) in a
  // synced write of its own: the caller saves it before it produces with that count.
  // A failed write is a write error (LogStatus::health). Returns the bounds now saved.
  [[nodiscard]] virtual absl::StatusOr<std::vector<RoutingBound>> SaveRoutingBound(
      const std::string& topic, RoutingBound bound) = 0;
};

}  // namespace kspool::wal
