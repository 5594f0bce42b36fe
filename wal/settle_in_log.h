// SettleInLog: what settling messages does to the log itself (FORMAT.md, "Settling part of
// a record"): a version-1 entry's key is deleted; a batch record's messages get their
// bits in its `settled_in/` bitmap in `meta`, and the batch that settles the record's last
// live message deletes the record and its bitmap together (one tombstone per record).
// Internal to wal/: RocksWal::Settle calls it with settle_mu_ held, so it is the only
// writer of the records and bitmaps it reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rocksdb/write_batch.h"
#include "wal/inspection.h"
#include "wal/open_db.h"
#include "wal/stats.h"

namespace kspool::wal {

// What a settle does to the bytes held by part-settled records, per topic (a batch
// record holds one topic): `added`, messages settled now whose record stays (another of
// its messages is live); `released`, messages settled before whose record is deleted
// now. Sizes are the accounted ones (LogCursor::size()); a record whose checksum does not
// match is never charged (its bytes cannot vouch for a topic or a size, and the drain
// discards its messages together when it reads them). One that turned unreadable after
// some of its messages were charged (a byte changed on disk) cannot say whose they were
// when it is deleted: `unreadable_released` counts them, and the caller recounts the
// topics' held bytes from the bitmaps (ReadBitmaps).
struct HeldChange {
  std::map<std::string, Counts> added;
  std::map<std::string, Counts> released;
  uint64_t unreadable_released = 0;
};

// Adds to `wb` the writes that settle `seqs` (sorted, unique, each one live). A number
// that no record holds is passed over (a settle applied twice: it is not live). Fails
// only when the log or a bitmap cannot be read; `wb` is then unusable. `held` gains
// the change to the topics' held bytes; the caller persists it in the same batch.
[[nodiscard]] absl::Status SettleInLog(const OpenDb& db, const std::vector<uint64_t>& seqs,
                                       rocksdb::WriteBatch* wb, HeldChange* held);

// Reads every `settled_in/` bitmap with its record, at `snap` (null: the latest): the
// held messages per topic of the records that verify, and what is wrong with the others
// (BitmapCheck). It walks every bitmap: for `kspoolctl wal verify`, and for the rare
// settle that deletes a charged record that no longer verifies (HeldChange).
[[nodiscard]] absl::Status ReadBitmaps(const OpenDb& db, const rocksdb::Snapshot* snap,
                                       BitmapCheck* out);

}  // namespace kspool::wal
