#include "wal/delivery_record.h"

#include <algorithm>
#include <limits>

#include "wal/coding.h"
#include "wal/keys.h"

namespace kspool::wal {
namespace {

// The state byte (FORMAT.md).
constexpr uint8_t kStateDelivered = 1;
constexpr uint8_t kStateDiscarded = 2;

}  // namespace

Outcome DeliveryRun::At(uint64_t seq) const {
  Outcome d;
  d.seq = seq;
  d.state = discarded() ? Outcome::State::kDiscarded : Outcome::State::kDelivered;
  d.topic = topic;
  d.partition = partition;
  d.offset = OffsetOf(seq);
  d.time_ms = time_ms;
  d.discard_reason = reason;
  d.error = error;
  return d;
}

DeliveryRun DeliveryRun::Of(const Outcome& o, int64_t t) {
  DeliveryRun r;
  r.first_seq = o.seq;
  r.count = 1;
  r.time_ms = t;
  r.partition = std::max(o.partition, -1);  // -1: none; nothing below it is stored
  r.first_offset = o.offset;
  r.topic = o.topic;
  if (o.discarded()) {
    r.reason = o.discard_reason;
    r.error = o.error;
  }
  return r;
}

std::string EncodeDeliveryRun(const DeliveryRun& run) {
  std::string out;
  out.reserve(24 + run.topic.size() + run.reason.size() + run.error.size());
  out.push_back(static_cast<char>(kDeliveryRunVersion));
  coding::PutVarint(&out, run.count);
  out.push_back(static_cast<char>(run.discarded() ? kStateDiscarded : kStateDelivered));
  coding::PutFixed64(&out, static_cast<uint64_t>(run.time_ms));
  coding::PutVarint(&out, static_cast<uint64_t>(static_cast<int64_t>(run.partition) + 1));
  coding::PutVarint(&out, coding::ZigZag(run.first_offset));
  coding::PutBytes(&out, run.topic);
  coding::PutBytes(&out, run.reason);
  coding::PutBytes(&out, run.error);
  return out;
}

absl::StatusOr<DeliveryRun> DecodeDeliveryRun(std::string_view key, std::string_view value) {
  if (key.size() != 8) {
    return absl::DataLossError("delivery index key of " + std::to_string(key.size()) +
                               " bytes, not 8");
  }
  DeliveryRun r;
  r.first_seq = keys::ParseSeq(key);
  const std::string where = "delivery run at " + std::to_string(r.first_seq);
  coding::Reader in(value);
  uint8_t version, state;
  uint64_t time, partition, offset;
  if (!in.Byte(&version)) return absl::DataLossError(where + " is empty");
  if (version != kDeliveryRunVersion) {
    return absl::FailedPreconditionError(where + " has version " + std::to_string(version));
  }
  if (!in.Varint(&r.count) || !in.Byte(&state) || !in.Fixed64(&time) || !in.Varint(&partition) ||
      !in.Varint(&offset) || !in.Bytes(&r.topic) || !in.Bytes(&r.reason) || !in.Bytes(&r.error)) {
    return absl::DataLossError(where + " is truncated");
  }
  if (!in.done()) return absl::DataLossError(where + " has bytes after its end");
  r.time_ms = static_cast<int64_t>(time);
  r.first_offset = coding::UnZigZag(offset);
  if (r.count == 0) return absl::DataLossError(where + " holds no messages");
  if (r.count > UINT64_MAX - r.first_seq) return absl::DataLossError(where + " overflows");
  if (state != kStateDelivered && state != kStateDiscarded) {
    return absl::DataLossError(where + " has an unknown state " + std::to_string(state));
  }
  if ((state == kStateDiscarded) != r.discarded()) {
    return absl::DataLossError(where + ": its state and its discard reason disagree");
  }
  if (partition > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()) + 1) {
    return absl::DataLossError(where + " has partition " + std::to_string(partition - 1));
  }
  r.partition = static_cast<int32_t>(static_cast<int64_t>(partition) - 1);
  if (r.first_offset >= 0 &&
      r.count - 1 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - r.first_offset)) {
    return absl::DataLossError(where + ": its offsets overflow");
  }
  return r;
}

}  // namespace kspool::wal
