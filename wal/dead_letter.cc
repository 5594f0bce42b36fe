#include "wal/dead_letter.h"

#include "wal/coding.h"

namespace kspool::wal {

std::string EncodeDeadLetter(const Outcome& o, int64_t discard_time_ms) {
  std::string out;
  out.reserve(16 + o.discard_reason.size() + o.error.size() + o.raw.size());
  out.push_back(1);
  coding::PutFixed64(&out, static_cast<uint64_t>(discard_time_ms));
  coding::PutBytes(&out, o.discard_reason);
  coding::PutBytes(&out, o.error);
  out.append(o.raw);
  return out;
}

absl::StatusOr<DeadLetter> DecodeDeadLetter(uint64_t seq, std::string_view bytes) {
  coding::Reader in(bytes);
  uint8_t version;
  uint64_t time;
  DeadLetter d;
  d.seq = seq;
  if (!in.Byte(&version)) return absl::DataLossError("dead letter " + std::to_string(seq) + " is empty");
  if (version != 1) {
    return absl::FailedPreconditionError("dead letter " + std::to_string(seq) + " has version " +
                                         std::to_string(version));
  }
  if (!in.Fixed64(&time) || !in.Bytes(&d.reason) || !in.Bytes(&d.error_text)) {
    return absl::DataLossError("dead letter " + std::to_string(seq) + " is truncated");
  }
  d.discard_time_ms = static_cast<int64_t>(time);
  d.raw.assign(in.rest());
  return d;
}

}  // namespace kspool::wal
