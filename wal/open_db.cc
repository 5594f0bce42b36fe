// OpenDb (open_db.h): opening the WAL's database for writing, with the options that
// bound its memory and suit a log read once, in order.
#include "wal/open_db.h"

#include <algorithm>
#include <string>
#include <vector>

#include "rocksdb/table.h"
#include "wal/options.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

namespace {

// Memory is bounded by configuration, not by the backlog: at most two such memtables for
// the log, and a cap on all memtables together (db_write_buffer_size).
constexpr size_t kLogWriteBufferSize = 32 << 20;

// Bytes in RocksDB's own log files (*.log) in `dir`: what an open replays.
uint64_t RocksLogBytes(rocksdb::Env* env, const std::string& dir) {
  std::vector<std::string> names;
  if (!env->GetChildren(dir, &names).ok()) return 0;
  uint64_t total = 0;
  for (const std::string& name : names) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".log") != 0) continue;
    uint64_t size = 0;
    if (env->GetFileSize(dir + "/" + name, &size).ok()) total += size;
  }
  return total;
}

}  // namespace

OpenDb::~OpenDb() {
  if (!db) return;
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  db->Close().PermitUncheckedError();
}

absl::StatusOr<std::unique_ptr<OpenDb>> OpenDb::Open(const std::string& dir, rocksdb::Env* env,
                                                     std::shared_ptr<rocksdb::Logger> info_log) {
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.max_background_jobs = 2;
  // Never a LOG file on the WAL's volume (info_log.h): one failed LOG write there made
  // RocksDB abort at its next line, and every reopen left another LOG.old.* behind.
  db_opts.info_log = std::move(info_log);
  db_opts.max_open_files = kMaxOpenFiles;
  db_opts.avoid_flush_during_shutdown = true;  // the log replays; exit fast
  // Opening needs no free space for table files: RocksDB's log files are replayed into
  // memtables and kept until those flush. On a full volume, flushing them at the open
  // failed, so the agent could not start, and could not drain to free space.
  db_opts.avoid_flush_during_recovery = true;
  db_opts.db_write_buffer_size = 96 << 20;
  if (env) db_opts.env = env;

  rocksdb::ColumnFamilyOptions log_opts;
  // Until the open is done, large enough for what the log files hold, so that replaying
  // them fills no memtable (which would be flushed at once); set back after the open.
  const uint64_t replay = RocksLogBytes(env ? env : rocksdb::Env::Default(), dir);
  log_opts.write_buffer_size = std::max<size_t>(kLogWriteBufferSize, replay + replay / 2);
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
  if (log_opts.write_buffer_size != kLogWriteBufferSize) {
    RETURN_IF_ERROR(FromRocks(
        db->db->SetOptions(db->log, {{"write_buffer_size", std::to_string(kLogWriteBufferSize)}}),
        "set the WAL's memtable size"));
  }
  return db;
}

}  // namespace kspool::wal
