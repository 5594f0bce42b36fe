// Outcome: what became of one message — the one shape of a delivery outcome, from the
// drain (which settles it) through the WAL's delivery index (which keeps it and answers
// lookups and the ordered feed with it) to the waiters, the watchers and the proto
// (agent/api's ToProto is the one converter to kspool.v1.DeliveryStatus).
//
// The state is the enum: delivered is kDelivered (with topic, partition, offset), a
// discard is kDiscarded (with its reason and error), never an empty or non-empty string.
// Three fields are Settle()'s inputs only — the stored record (kept as the dead letter
// of a discard), its size and its receive time: the drain fills them, Settle reads them,
// and they are left empty (0) in every outcome read back from the index and in those
// the drain hands on after the settle. They live here rather than in a second struct so
// that one value travels from the delivery report to the answer; the on-disk encoding is
// the index's own private shape (delivery_record.h).
// A plain value, owned by whoever holds it; not thread-safe by itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace kspool::wal {

struct Outcome {
  enum class State {
    kUnknown,    // not kept (below the index's floor), not assigned yet, or never an entry
    kPending,    // live in the log
    kDelivered,  // in Kafka: topic, partition, offset
    kDiscarded,  // discarded: reason and error (a dead letter)
  };

  uint64_t seq = 0;
  State state = State::kUnknown;
  std::string topic;
  // Delivered: where Kafka put it (from the delivery report). -1: not known.
  int32_t partition = -1;
  int64_t offset = -1;
  // When the outcome was known, wall clock ms; 0 given to Settle(): its clock's time.
  int64_t time_ms = 0;
  // Discarded: why (e.g. "msg_size_too_large", agent/drain/discard_reasons.h).
  std::string discard_reason;
  // Discarded: Kafka's (or the drain's) text. Unknown: why it is not known.
  std::string error;

  // Settle()'s inputs (see above).
  // The stored record, kept in the dead-letter store on discard. If it does not decode,
  // `topic` is only a guess: Settle charges the discard to the topic whose ledger owns
  // the entry (FORMAT.md, corrupt records).
  std::string raw;
  size_t size = 0;              // the entry's stored size
  int64_t receive_time_ms = 0;  // 0: unknown (an undecodable record)
  // Delivered: false leaves the partition's settled watermark where it is (the caller
  // knows of copies below this offset not settled yet: settled_watermarks.h).
  bool raises_watermark = true;

  bool delivered() const { return state == State::kDelivered; }
  bool discarded() const { return state == State::kDiscarded; }

  static Outcome Delivered(uint64_t seq, std::string topic, int32_t partition, int64_t offset,
                           int64_t time_ms = 0) {
    Outcome o;
    o.seq = seq;
    o.state = State::kDelivered;
    o.topic = std::move(topic);
    o.partition = partition;
    o.offset = offset;
    o.time_ms = time_ms;
    return o;
  }
  static Outcome Discarded(uint64_t seq, std::string topic, std::string reason,
                           std::string error, int64_t time_ms = 0) {
    Outcome o;
    o.seq = seq;
    o.state = State::kDiscarded;
    o.topic = std::move(topic);
    o.discard_reason = std::move(reason);
    o.error = std::move(error);
    o.time_ms = time_ms;
    return o;
  }
};

// OK if every outcome can be settled: kDelivered, or kDiscarded with a reason (the
// delivery index stores the state as a byte and a discard by its reason).
// Inline: Settle() asks it of every batch.
[[nodiscard]] inline absl::Status CheckSettleable(const std::vector<Outcome>& outcomes) {
  for (const Outcome& o : outcomes) {
    if (o.delivered() || (o.discarded() && !o.discard_reason.empty())) continue;
    return absl::InvalidArgumentError(
        "the outcome of sequence number " + std::to_string(o.seq) +
        (o.discarded() ? " is a discard without a reason" : " is neither delivered nor discarded"));
  }
  return absl::OkStatus();
}

}  // namespace kspool::wal
