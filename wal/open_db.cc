// OpenDb (open_db.h): opening the WAL's database for writing, with the options that
// bound its memory and suit a log read once, in order.
#include "wal/open_db.h"

#include <string>

#include "rocksdb/table.h"
#include "wal/options.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

OpenDb::~OpenDb() {
  if (!db) return;
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  db->Close().PermitUncheckedError();
}

absl::StatusOr<std::unique_ptr<OpenDb>> OpenDb::Open(const std::string& dir, rocksdb::Env* env,
                                                     std::shared_ptr<rocksdb::Logger> info_log,
                                                     uint64_t max_log_bytes) {
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.max_background_jobs = 2;
  // Never a LOG file on the WAL's volume (info_log.h): one failed LOG write there made
  // RocksDB abort at its next line, and every reopen left another LOG.old.* behind.
  db_opts.info_log = std::move(info_log);
  db_opts.max_open_files = kMaxOpenFiles;
  db_opts.avoid_flush_during_shutdown = true;  // the log replays; exit fast
  // What an open replays is flushed at once (RocksDB's default), which needs room on the
  // volume: the reserve (open_reserve.h) keeps that room, and bounds the logs to fit it.
  // Keeping the replay in memtables instead (avoid_flush_during_recovery) is not safe
  // here: with it, drain_sim found, after power cuts, a commit point past the receive
  // time of an entry still in the WAL (seeds in tests/sim/regressions.txt, "open").
  db_opts.db_write_buffer_size = 96 << 20;
  db_opts.max_total_wal_size = max_log_bytes;
  if (env) db_opts.env = env;

  rocksdb::ColumnFamilyOptions log_opts;
  // Memory is bounded by configuration, not by the backlog: at most two 32 MiB memtables
  // for the log, and a cap on all memtables together.
  log_opts.write_buffer_size = 32 << 20;
  log_opts.max_write_buffer_number = 2;
  log_opts.compression = rocksdb::kLZ4Compression;
  // The log is read sequentially, once: large blocks mean fewer block reads, index
  // entries and iterator steps per entry. Point reads (one per commit point) are rare.
  rocksdb::BlockBasedTableOptions log_table;
  log_table.block_size = 64 << 10;
  log_opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(log_table));
  rocksdb::ColumnFamilyOptions small_opts;
  small_opts.write_buffer_size = 4 << 20;

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, small_opts},
      {"log", log_opts},
      {"meta", small_opts},
      {"dead", small_opts},
      {"delivery", small_opts}};  // created on the first open of an older WAL
  auto db = std::make_unique<OpenDb>();
  rocksdb::DB* raw = nullptr;
  RETURN_IF_ERROR(
      FromRocks(rocksdb::DB::Open(db_opts, dir, cfs, &db->handles, &raw), "open WAL " + dir));
  db->db.reset(raw);
  db->log = db->handles[1];
  db->meta = db->handles[2];
  db->dead = db->handles[3];
  db->delivery = db->handles[4];
  return db;
}

}  // namespace kspool::wal
