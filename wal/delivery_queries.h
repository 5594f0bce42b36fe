// wal::DeliveryQueries: what became of a sequence number, from the delivery index that
// Settle() fills (FORMAT.md "Column family `delivery`"): point lookups for
// GetDeliveryStatus and an ordered feed for WatchDeliveries.
//
// Thread safety: every method may be called from any thread; readers never block
// Settle() or appends, and a read-only WAL serves both. Ownership: borrowed from the
// owner of the wal::Wal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/outcome.h"
#include "wal/tally_store.h"

namespace kspool::wal {

class DeliveryQueries {
 public:
  virtual ~DeliveryQueries() = default;

  // One Outcome per element of `seqs`, in the order given (repeats allowed), appended
  // to *out: the settled outcome if the index holds it (also below the floor: an entry
  // stuck there and settled late), else PENDING if the entry is live (with its record's
  // topic, "" if unreadable), else UNKNOWN with `error` saying why: "older than the
  // delivery index keeps (oldest kept: F)", "not assigned yet (next: N)", "no message
  // was accepted with this sequence number", or "sequence numbers start at 1".
  // The index and the log are read in one snapshot, so an entry settled meanwhile is
  // never reported as neither. Meant for up to about 10,000 numbers per call (they are
  // sorted; one seek serves a whole run).
  [[nodiscard]] virtual absl::Status LookupDeliveries(const std::vector<uint64_t>& seqs,
                                                      std::vector<Outcome>* out) = 0;
  // The feed: the outcomes of sequence numbers in [from_seq, head), in order, where
  // every entry below head is settled (head is read first, so nothing returned can
  // change, and an unsettled entry holds back every later outcome); at most max_entries,
  // appended to *out. *next is where to continue: every outcome in [from_seq, *next)
  // was returned; max(from_seq, head) once caught up. Sequence numbers that never held
  // an entry are skipped. OUT_OF_RANGE when from_seq is below the floor
  // (forgotten outcomes), also when a trim raised it while the call ran: its message
  // names the range missed, "the outcomes of sequence numbers F..L are no longer kept
  // (the delivery index starts at L+1)", and *next is the floor, where to go on from.
  // Age never raises the floor past the oldest live entry (DeliveryIndex::PlanTrim),
  // so a caller at or above the head, or at the floor, is refused only when the byte
  // bound forced a trim past it.
  [[nodiscard]] virtual absl::Status ScanDeliveries(uint64_t from_seq, size_t max_entries,
                                                    std::vector<Outcome>* out,
                                                    uint64_t* next) = 0;
  // The durable delivery tally of one Kafka partition: the distinct sequence numbers
  // settled as delivered there, counted and sketched (docs/AUDIT.md); zero for a
  // partition nothing was delivered to.
  [[nodiscard]] virtual absl::StatusOr<DeliveryTally> DeliveryTallyOf(const std::string& topic,
                                                                      int32_t partition) = 0;
};

}  // namespace kspool::wal
