// Trimming the oldest keys of a column family keyed by big-endian sequence numbers (the
// dead letters, the delivery index): TrimDeadLetters and TrimDeliveries walk it from its
// lowest key while their limits say so, then delete what they took with one range
// tombstone. Internal to wal/; the caller holds the locks that keep the database open.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "wal/keys.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

// What `take` says of the next key.
enum class TakeKey {
  kTake,   // remove it and look at the next
  kStop,   // keep it, and everything after it
  kBound,  // keep it: the per-call bound is reached; call again (`more`)
};

// The keys taken: [first, end) in key order, as strings ready for DeleteRange.
struct OldestPrefix {
  size_t keys = 0;
  std::string first, end;
  bool more = false;  // stopped at max_keys or at a kBound
};

// Offers each key of `cf` from the lowest up, as `take(seq, value)`, until it answers
// other than kTake or max_keys keys were taken.
template <typename Take>
absl::StatusOr<OldestPrefix> TakeOldest(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                                        size_t max_keys, const Take& take) {
  OldestPrefix p;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const uint64_t seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    const TakeKey t = p.keys >= max_keys
                          ? TakeKey::kBound
                          : take(seq, std::string_view(it->value().data(), it->value().size()));
    if (t != TakeKey::kTake) {
      p.more = t == TakeKey::kBound;
      break;
    }
    if (p.keys++ == 0) p.first = keys::Seq(seq);
    p.end = keys::Seq(seq + 1);
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "scan for the oldest keys"));
  return p;
}

}  // namespace kspool::wal
