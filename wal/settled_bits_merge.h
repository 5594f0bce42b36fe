// The `settled_in/` bitmaps' merge operator (FORMAT.md, "Settling part of a record"). A
// settle that leaves a record part-settled writes only the bits it sets, as a merge
// operand, not the record's whole bitmap again: what a record's settles write together
// grows with the messages they settle (at most about 3 bytes each, never more than the
// bitmap), not with count x settles. RocksDB ORs the operands into the stored bitmap when
// it reads or compacts the key, so every reader still sees a plain bitmap (SettledBits).
// Internal to wal/; every open of a WAL (read-write or read-only) must set it on `meta`.
// Thread-safe (stateless).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rocksdb/merge_operator.h"
#include "wal/settled_bits.h"

namespace kspool::wal {

// The operator, shared by every open.
std::shared_ptr<rocksdb::MergeOperator> SettledBitsMerge();

// The operand that sets `add`'s bits in a bitmap of add.count() bits: a list of the bits
// (varint gaps) or the bitmap itself, whichever is shorter.
std::string SettledBitsOperand(const SettledBits& add);

}  // namespace kspool::wal
