// OpenDb: one open RocksDB database with the WAL's column families (FORMAT.md). Owned
// by RocksWal, which swaps it on Reopen() under its db_mu_; the WAL's components get
// a reference for the duration of one call and never keep it. RocksDB itself is
// thread-safe; the handles do not change while the OpenDb lives.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"

namespace kspool::wal {

struct OpenDb {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::ColumnFamilyHandle* log = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* dead = nullptr;
  // The delivery index; null only in a read-only open of a WAL written before it existed.
  rocksdb::ColumnFamilyHandle* delivery = nullptr;
  // Opens (creating what is missing) the database in `dir` for writing; `env`: RocksDB's
  // file system, or null for the default (tests inject faults through it); `info_log`:
  // where RocksDB logs (info_log.h), never a file in `dir`; `max_log_bytes`: RocksDB's
  // log files beyond this make it flush the memtables they hold (0: its default), so an
  // open, which flushes them, needs at most about that much room (open_reserve.h);
  // `bound_bytes`: Options::max_bytes (0: none). RocksDB's own overhead is sized from
  // the bound (DiskSizing, open_db.cc): its logs, memtables and the settled data its
  // table files keep until compaction then stay a fraction of it, so the directory as
  // `du` sees it stays near the bound whatever passes through.
  static absl::StatusOr<std::unique_ptr<OpenDb>> Open(const std::string& dir, rocksdb::Env* env,
                                                      std::shared_ptr<rocksdb::Logger> info_log,
                                                      uint64_t max_log_bytes = 0,
                                                      uint64_t bound_bytes = 0);
  // The options of every iterator the WAL opens on `cf`. RocksDB 7.8.3's merging iterator
  // can lose the error of a table file it fails to open or read at a file boundary and
  // go on, so that a scan skips the rest of that level and still ends OK; iterators that
  // ignore range deletions take a path that keeps every error (open_db.cc). They do so
  // wherever that changes no answer: always for `log`, whose reads start at the head,
  // and for the other column families when no table file holds a range tombstone.
  rocksdb::ReadOptions IteratorOptions(const rocksdb::ColumnFamilyHandle* cf) const;
  // After an open: notes the column families whose table files hold range tombstones
  // (only a WAL written by an older version has any: FORMAT.md, "Deletes").
  void NoteRangeTombstones();
  // Destroys the handles and closes the database.
  ~OpenDb();

 private:
  std::set<uint32_t> with_range_tombstones_;  // column family ids
};

}  // namespace kspool::wal
