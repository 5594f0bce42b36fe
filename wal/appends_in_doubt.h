// AppendsInDoubt: appends whose write reached RocksDB and failed (a failed sync). RocksDB
// may or may not have kept such a write, so its outcome is known only once the WAL has
// been reopened from what is on disk. A caller that appends again blindly would store
// its messages twice, under two sequence numbers no consumer and no reconciliation can
// pair; it asks instead (AppendLog::AppendKept).
//
// The committer records each append of a failed group by its first sequence number
// (Failed); the Reopen() that follows resolves them (Resolve): an append was kept when
// the log reloaded from disk ends past its first number. A group is one atomic write
// batch holding its entries and the next-number mark, and after a failed write nothing
// more is written until the reopen, so "ends past it" means "this group was kept".
// At most kMaxRemembered appends are remembered (the oldest dropped first): a caller
// that waits longer than that many failed appends gets NOT_FOUND.
// Thread safety: none of its own; RocksWal holds it under its mu_.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kspool::wal {

// The UNAVAILABLE status of an append in doubt carries its first sequence number under
// this payload type (decimal text).
inline constexpr char kAppendInDoubtPayload[] = "type.kspool.dev/wal.AppendInDoubt";

// `s` marked as the failure of an append in doubt that starts at `first_seq`.
absl::Status MarkAppendInDoubt(absl::Status s, uint64_t first_seq);
// The first sequence number of the append in doubt that failed with `s`; nullopt when
// `s` is another failure (refused before anything was written: nothing to ask).
std::optional<uint64_t> AppendInDoubtSeq(const absl::Status& s);

class AppendsInDoubt {
 public:
  static constexpr size_t kMaxRemembered = 4096;

  void Failed(uint64_t first_seq);
  // At a Reopen, before any new number is handed out: the log on disk ends before
  // `durable_next_seq`.
  void Resolve(uint64_t durable_next_seq);
  // Whether the append starting at `first_seq` was kept: UNAVAILABLE until a reopen has
  // resolved it, NOT_FOUND for one never recorded or dropped.
  absl::StatusOr<bool> Kept(uint64_t first_seq) const;

 private:
  std::map<uint64_t, std::optional<bool>> appends_;  // first seq -> kept, once resolved
};

}  // namespace kspool::wal
