// wal::Inspection: reading the WAL without changing it, for the Admin service, the
// agent's status, kspoolctl and verification: the discard report, the live entries and
// dead letters in order, the newest entry, and a recount of the live entries.
//
// Every method here also works on a WAL opened with Options::read_only. Thread safety:
// every method may be called from any thread. Ownership: borrowed from the owner of the
// wal::Wal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/entry.h"
#include "wal/log_status.h"
#include "wal/report.h"
#include "wal/stats.h"

namespace kspool::wal {

// What the bitmaps of part-settled records say (Inspection::CheckBitmaps).
struct BitmapCheck {
  uint64_t bitmaps = 0;
  std::map<std::string, Counts> held;  // settled messages per topic, by the bitmaps
  // Problems, each naming the bitmap's key: no record under it (an orphan), a length
  // that is not its record's count, every bit set (the record should be gone), a
  // record that does not verify (its messages are not counted).
  std::vector<std::string> orphans, bad_length, all_set, unreadable;
};

class Inspection : public virtual LogStatus {
 public:
  ~Inspection() override = default;

  // A report at the last saved commit point.
  virtual Report GetReport() const = 0;
  // Reads up to max_entries / max_bytes live entries with seq >= from_seq, in order.
  [[nodiscard]] virtual absl::Status Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                                          std::vector<Entry>* out) = 0;
  // Reads dead letters with seq >= from_seq, in order.
  [[nodiscard]] virtual absl::Status ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                                                     std::vector<DeadLetter>* out) = 0;
  // The live entry with the highest sequence number (decoded as Scan() does), or
  // nullopt when the log is empty.
  [[nodiscard]] virtual absl::StatusOr<std::optional<Entry>> Newest() = 0;
  // Counts the live entries per topic by scanning the whole log (for verification:
  // the persisted counters must agree with it). Undecodable entries count under "".
  [[nodiscard]] virtual absl::Status CountLive(std::map<std::string, Counts>* out) = 0;
  // Reads every `settled_in/` bitmap with its record (for verification, FORMAT.md
  // "Settling part of a record"): what they hold per topic must equal the held counters.
  [[nodiscard]] virtual absl::StatusOr<BitmapCheck> CheckBitmaps() = 0;
};

}  // namespace kspool::wal
