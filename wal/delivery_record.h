// Codec of the delivery index (column family `delivery`, FORMAT.md): one stored value per
// RUN of consecutive sequence numbers that share an outcome, so that a settle of
// thousands of messages to one partition costs one key, not thousands.
// Internal to wal/. Pure functions and a plain struct; not thread-safe by itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "wal/outcome.h"

namespace kspool::wal {

inline constexpr uint8_t kDeliveryRunVersion = 1;

// Sequence numbers [first_seq, first_seq + count), settled alike: same topic, outcome
// (delivered, or discarded with the same reason and error), partition and time, and
// offsets first_offset, first_offset + 1, ... (a negative first_offset, e.g. -1 for a
// discard or an unknown offset, is the offset of every one of them).
struct DeliveryRun {
  uint64_t first_seq = 0;
  uint64_t count = 0;
  int64_t time_ms = 0;
  int32_t partition = -1;
  int64_t first_offset = -1;
  std::string topic;
  // Discarded for this reason, with this error; empty when delivered (the stored state
  // byte and the reason always agree, so the reason is the state here).
  std::string reason;
  std::string error;

  bool discarded() const { return !reason.empty(); }
  uint64_t end_seq() const { return first_seq + count; }
  bool Covers(uint64_t seq) const { return seq >= first_seq && seq - first_seq < count; }
  int64_t OffsetOf(uint64_t seq) const {
    return first_offset < 0 ? first_offset : first_offset + static_cast<int64_t>(seq - first_seq);
  }
  // The outcome of `seq`, which the run covers (no Settle() inputs: raw, size, receive
  // time stay empty).
  Outcome At(uint64_t seq) const;
  // True if `o`, settled at `t`, is the run's next sequence number with the same
  // outcome, so that it extends the run. Inline: Settle asks it once per message.
  bool Extends(const Outcome& o, int64_t t) const {
    return o.seq == end_seq() && t == time_ms && o.offset == OffsetOf(o.seq) &&
           (o.partition < -1 ? -1 : o.partition) == partition && o.topic == topic &&
           o.discarded() == discarded() &&
           (!o.discarded() || (o.discard_reason == reason && o.error == error));
  }
  // A run of one: `o` (delivered, or discarded with a reason: CheckSettleable), settled
  // at `time_ms`.
  static DeliveryRun Of(const Outcome& o, int64_t time_ms);
};

// The stored value (the key is keys::Seq(run.first_seq)).
std::string EncodeDeliveryRun(const DeliveryRun& run);
// Rejects a key that is not 8 bytes, a value that is truncated, has bytes left over, or
// holds an impossible run (no messages, an unknown state, a state that disagrees with
// the reason, a partition out of range, sequence numbers or offsets that overflow) with
// DATA_LOSS; a value of an unknown version with FAILED_PRECONDITION (as the other codecs).
absl::StatusOr<DeliveryRun> DecodeDeliveryRun(std::string_view key, std::string_view value);

}  // namespace kspool::wal
