// What the WAL gives back when it is read: a live entry (Entry), what a choosing scan
// offers for each entry before decoding it (ScanCandidate, ScanChoice, ScanRange), and a
// dead letter (DeadLetter). Plain values, owned by the caller that receives them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "wal/record.h"

namespace kspool::wal {

// One stored entry as read back. `status` is not OK for an entry that fails to decode
// (then `record` is empty and `raw` holds the stored bytes).
struct Entry {
  uint64_t seq = 0;
  size_t size = 0;  // encoded bytes
  absl::Status status;
  Record record;
  std::string raw;
};

// What ScanChoosing() offers its chooser for each live entry, read without decoding the
// record: topic "" and receive time 0 when the record is unreadable, and receive time 0
// for a batch record that does not verify (its time may be anything).
struct ScanCandidate {
  uint64_t seq = 0;
  std::string_view topic;
  int64_t receive_time_ms = 0;
  size_t size = 0;
  int32_t partition = -1;  // explicit partition, or -1
  std::optional<std::string_view> key;
};
enum class ScanChoice {
  kTake,  // decode it into the output
  kSkip,  // pass over it
  kStop,  // end the scan before it
};
struct ScanRange {
  uint64_t from_seq = 0;
  uint64_t to_seq = UINT64_MAX;  // exclusive
  size_t max_keys = 65536;       // bounded work per call: entries offered, taken or not
};

// A discarded entry, as kept in the dead-letter store.
struct DeadLetter {
  uint64_t seq = 0;
  int64_t discard_time_ms = 0;
  std::string reason;
  std::string error_text;
  std::string raw;  // the original record bytes
};

}  // namespace kspool::wal
