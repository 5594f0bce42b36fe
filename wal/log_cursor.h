// LogCursor: the live messages of column family `log`, in sequence order, whatever
// record holds them: a version-1 entry (one key per message) or a version-2 batch record
// (FORMAT.md, "Batch records"), whose settled messages (its `settled_in/` bitmap in
// `meta`) are passed over. Every reader of the log goes through it, so "live" means one
// thing everywhere: the record is present and the message's bit is clear.
//
// A record and its bitmap are read from one snapshot (the caller's, or the cursor's own),
// so a settle that sets bits or deletes the record is seen whole or not at all.
// Errors (an iterator that stopped on one, a bitmap that could not be read) end the walk:
// Valid() turns false and status() says why; an invalid cursor with an OK status means
// no live message is left in range. Not thread-safe; borrows the OpenDb, which the
// caller keeps open (its db_mu_) while the cursor lives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "wal/entry.h"
#include "wal/open_db.h"
#include "wal/record.h"
#include "wal/settled_bits.h"

namespace kspool::wal {

class LogCursor {
 public:
  struct Range {
    uint64_t lower = 0;                           // messages below are passed over
    uint64_t upper = UINT64_MAX;                  // exclusive
    bool fill_cache = true;                       // false for a walk that reads each block once
    const rocksdb::Snapshot* snapshot = nullptr;  // null: the cursor takes its own
  };
  LogCursor(const OpenDb& db, const Range& range);

  // The first live message at or after `seq` (and the range's lower bound).
  void Seek(uint64_t seq);
  // The newest live message in range.
  void SeekToLast();
  void Next();
  bool Valid() const { return valid_; }
  // OK, or the error that ended the walk, prefixed with `what`.
  absl::Status status(std::string_view what) const;

  // The current message; only while Valid().
  uint64_t seq() const { return rec_.first_seq + idx_; }
  // Its accounted size: its version-1 record's (record.h); for a batch record whose
  // layout does not parse, an even share of the value's bytes.
  size_t size() const;
  // Read without decoding the message (a version-1 entry's checksum is not checked).
  absl::StatusOr<int64_t> ReceiveTime() const;
  // The same, only once a checksum vouches for it (a version-1 entry is decoded): an
  // error for a corrupt record, whose time may be anything, even years ahead. Whatever
  // moves a commit point or the receive-time floor reads this one.
  absl::StatusOr<int64_t> VerifiedReceiveTime() const;
  // Valid until the cursor moves.
  RecordRouting Routing() const;
  // Decoded, or with its status and raw bytes: a message of an unreadable batch record
  // as UnreadableAsVersion1() gives it, or, when its layout does not parse either, an
  // even share of the record's bytes.
  Entry Decode() const;
  // The record that holds it.
  const LogKey& record() const { return rec_; }

 private:
  // Reads the record under the iterator; false at its end or on an error (status_).
  bool Load();
  // The first live message in range at or after `from`, starting from the record under
  // the iterator (`loaded`: already read into rec_).
  void Forward(uint64_t from, bool loaded);
  bool Settled(uint32_t idx) const { return bits_.Test(idx); }
  std::string_view CorruptShare() const;

  const OpenDb& db_;
  const Range range_;
  std::unique_ptr<rocksdb::ManagedSnapshot> own_snapshot_;
  const rocksdb::Snapshot* snapshot_;
  std::string lo_key_, hi_key_;
  rocksdb::Slice lo_, hi_;
  std::unique_ptr<rocksdb::Iterator> it_;
  absl::Status status_;
  bool valid_ = false;

  LogKey rec_;
  bool key_malformed_ = false;
  std::string_view value_;
  std::optional<absl::StatusOr<BatchView>> batch_;  // set for a batch record
  // An unreadable batch record's layout, when it still parses (its checksum failed).
  std::optional<BatchView> salvage_;
  mutable std::string unreadable_;  // what Routing() points into for such a message
  SettledBits bits_;
  uint32_t idx_ = 0;
};

}  // namespace kspool::wal
