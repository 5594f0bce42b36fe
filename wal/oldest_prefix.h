// Trimming the oldest keys of a column family keyed by big-endian sequence numbers (the
// dead letters, the delivery index): TrimDeadLetters and TrimDeliveries walk it from its
// lowest key while their limits say so, then delete what they took key by key (never a
// range tombstone: FORMAT.md, "Deletes"). The walk starts at a bound below which the
// caller knows no key is left (the end of its last trim), so that it does not step over
// the tombstones of earlier trims that compaction has not yet removed.
// Internal to wal/; the caller holds the locks that keep the database open.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "wal/keys.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

// What `take` says of the next key.
enum class TakeKey {
  kTake,   // remove it and look at the next
  kStop,   // keep it, and everything after it
  kBound,  // keep it: the per-call bound is reached; call again (`more`)
};

// The keys taken, in key order; every key of the column family below `end` was taken.
struct OldestPrefix {
  std::vector<uint64_t> taken;
  uint64_t end = 0;   // the last one taken + 1 (0 when none was)
  bool more = false;  // stopped at max_keys or at a kBound
};

// Deletes the keys of `p` from `cf` in `wb`, one point tombstone each.
inline void DeleteTaken(const OldestPrefix& p, rocksdb::ColumnFamilyHandle* cf,
                        rocksdb::WriteBatch* wb) {
  for (uint64_t seq : p.taken) wb->Delete(cf, keys::Seq(seq));
}

// Offers each key of `cf` from the lowest up (none is below `from_seq`), as
// `take(seq, value)`, until it answers other than kTake or max_keys keys were taken.
template <typename Take>
absl::StatusOr<OldestPrefix> TakeOldest(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                                        const rocksdb::ReadOptions& scan, uint64_t from_seq,
                                        size_t max_keys, const Take& take) {
  OldestPrefix p;
  const std::string lo = keys::Seq(from_seq);
  const rocksdb::Slice lo_s(lo);
  rocksdb::ReadOptions ro = scan;
  ro.iterate_lower_bound = &lo_s;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, cf));
  for (it->Seek(lo_s); it->Valid(); it->Next()) {
    const uint64_t seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    const TakeKey t = p.taken.size() >= max_keys
                          ? TakeKey::kBound
                          : take(seq, std::string_view(it->value().data(), it->value().size()));
    if (t != TakeKey::kTake) {
      p.more = t == TakeKey::kBound;
      break;
    }
    p.taken.push_back(seq);
    p.end = seq + 1;
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "scan for the oldest keys"));
  return p;
}

}  // namespace kspool::wal
