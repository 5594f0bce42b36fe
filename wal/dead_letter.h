// Codec of the values in column family `dead` (FORMAT.md): a discarded record with the
// reason, error text and time of its discard. Pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "wal/entry.h"
#include "wal/outcome.h"

namespace kspool::wal {

std::string EncodeDeadLetter(const Outcome& outcome, int64_t discard_time_ms);
absl::StatusOr<DeadLetter> DecodeDeadLetter(uint64_t seq, std::string_view bytes);

}  // namespace kspool::wal
