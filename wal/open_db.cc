// OpenDb (open_db.h): opening the WAL's database for writing, with the options that
// bound its memory and suit a log read once, in order.
#include "wal/open_db.h"

#include <string>

#include <algorithm>

#include "rocksdb/table.h"
#include "wal/options.h"
#include "wal/rocks_status.h"
#include "wal/settled_bits_merge.h"

namespace kspool::wal {

// The merging iterator of RocksDB 7.8.3 loses an error at one step: when a level's
// iterator (levels 1 and up) reaches the end of a table file, it returns a sentinel key
// for the file's boundary, and the step past that sentinel opens the next file and reads
// its first block; if that fails, the merging iterator drops the level from its heap
// without keeping the level's status (SkipNextDeleted; fixed upstream in 8.6). The scan
// goes on with the other levels, skips every key left in that level, and ends with an OK
// status, so live entries look settled. Level iterators return sentinels only to a
// merging iterator that processes range tombstones: with ignore_range_deletions they
// step to the next file inside Next(), whose errors the merging iterator keeps.
//
// Ignoring range deletions is exact where there are none to apply. This WAL writes no
// range tombstone; an older version wrote them in `log` only below the head it had
// persisted, and every read of the log starts at or above the head (the one walk below
// it, at open, deletes what it finds one key at a time, which a covered key does not
// mind). In `dead` and `delivery`, older versions' trims wrote them too: there they are
// ignored only when no table file holds one.
rocksdb::ReadOptions OpenDb::IteratorOptions(const rocksdb::ColumnFamilyHandle* cf) const {
  rocksdb::ReadOptions ro;
  ro.ignore_range_deletions =
      cf != nullptr && (cf == log || with_range_tombstones_.count(cf->GetID()) == 0);
  return ro;
}

void OpenDb::NoteRangeTombstones() {
  with_range_tombstones_.clear();
  for (rocksdb::ColumnFamilyHandle* cf : handles) {
    rocksdb::TablePropertiesCollection tables;
    // Unknown counts as holding some: the reads then take RocksDB's default path.
    if (!db->GetPropertiesOfAllTables(cf, &tables).ok()) {
      with_range_tombstones_.insert(cf->GetID());
      continue;
    }
    for (const auto& [file, props] : tables) {
      if (props && props->num_range_deletions > 0) with_range_tombstones_.insert(cf->GetID());
    }
    // A read-only open keeps what it replayed in memtables, which may be an older
    // version's trims; a writing open has flushed them. Anything there counts as some.
    uint64_t active = 0, immutable = 0;
    if (!db->GetIntProperty(cf, rocksdb::DB::Properties::kNumEntriesActiveMemTable, &active) ||
        !db->GetIntProperty(cf, rocksdb::DB::Properties::kNumEntriesImmMemTables, &immutable) ||
        active + immutable > 0) {
      with_range_tombstones_.insert(cf->GetID());
    }
  }
}

OpenDb::~OpenDb() {
  if (!db) return;
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  db->Close().PermitUncheckedError();
}

namespace {

// RocksDB's overhead sized from the WAL's bound. Measured with one message in 8 of every
// record stuck and twenty times a 4 MiB bound passing through (WalDiskBound): with the
// defaults sized for throughput (32 MiB memtables, logs kept until every column family
// flushed) the directory reached 29x the bound, mostly RocksDB logs holding settled
// records and table files whose settled entries no compaction had reached yet. Sized
// here: the logs at a sixteenth of the bound (max_total_wal_size flushes every column
// family then, so no log is kept for the small ones' sake), the log's memtable at a
// sixteenth and level 1 at a quarter: 84-88% of the bound then. (A compaction trigger on
// deletions, RocksDB's CompactOnDeletionCollector, changed nothing measurable there, and
// its factory, made inside the uninstrumented library, draws false heap reports from
// ThreadSanitizer: not used.) Unbounded WALs and large bounds keep the defaults.
struct DiskSizing {
  uint64_t log_write_buffer = 32 << 20;
  uint64_t small_write_buffer = 4 << 20;
  uint64_t all_write_buffers = 96 << 20;
  uint64_t max_log_bytes = 0;  // 0: RocksDB's default
  uint64_t level1_bytes = 0;   // 0: RocksDB's default
  uint64_t table_file_bytes = 0;
};

DiskSizing SizeFor(uint64_t bound, uint64_t max_log_bytes) {
  DiskSizing z;
  z.max_log_bytes = max_log_bytes;
  if (bound == 0) return z;
  auto part = [&](uint64_t divisor, uint64_t lo, uint64_t hi) {
    return std::clamp<uint64_t>(bound / divisor, lo, hi);
  };
  z.log_write_buffer = part(16, 64 << 10, 32 << 20);
  z.small_write_buffer = part(64, 64 << 10, 4 << 20);
  z.all_write_buffers = part(8, 256 << 10, 96 << 20);
  const uint64_t logs = part(16, 256 << 10, 1ull << 30);
  z.max_log_bytes = max_log_bytes == 0 ? logs : std::min(max_log_bytes, logs);
  z.level1_bytes = part(4, 1 << 20, 256 << 20);
  z.table_file_bytes = part(16, 64 << 10, 64 << 20);
  return z;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenDb>> OpenDb::Open(const std::string& dir, rocksdb::Env* env,
                                                     std::shared_ptr<rocksdb::Logger> info_log,
                                                     uint64_t max_log_bytes, uint64_t bound_bytes) {
  const DiskSizing z = SizeFor(bound_bytes, max_log_bytes);
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
  db_opts.db_write_buffer_size = z.all_write_buffers;
  db_opts.max_total_wal_size = z.max_log_bytes;
  if (env) db_opts.env = env;

  rocksdb::ColumnFamilyOptions log_opts;
  // Memory is bounded by configuration, not by the backlog: at most two 32 MiB memtables
  // for the log, and a cap on all memtables together.
  log_opts.write_buffer_size = z.log_write_buffer;
  log_opts.max_write_buffer_number = 2;
  if (z.level1_bytes) log_opts.max_bytes_for_level_base = z.level1_bytes;
  if (z.table_file_bytes) log_opts.target_file_size_base = z.table_file_bytes;

  // Compression where it pays: most entries are settled seconds after they are written,
  // so what a flush (level 0) or the first compaction (level 1) writes is read once and
  // deleted soon; compressing it cost up to a quarter of the agent's CPU with
  // incompressible payloads (docs/PERFORMANCE.md). A backlog that lasts long enough to
  // reach level 2 and below is what fills the volume: that is compressed.
  log_opts.compression_per_level.assign(log_opts.num_levels, rocksdb::kLZ4Compression);
  log_opts.compression_per_level[0] = rocksdb::kNoCompression;
  log_opts.compression_per_level[1] = rocksdb::kNoCompression;
  // The log is read sequentially, once: large blocks mean fewer block reads, index
  // entries and iterator steps per entry. Point reads (one per commit point) are rare.
  rocksdb::BlockBasedTableOptions log_table;
  log_table.block_size = 64 << 10;
  log_opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(log_table));
  rocksdb::ColumnFamilyOptions small_opts;
  small_opts.write_buffer_size = z.small_write_buffer;
  small_opts.merge_operator = SettledBitsMerge();
  // A key settled many times between flushes is merged in the memtable after this many
  // operands, so reading it (each settle does) never walks a long operand list.
  small_opts.max_successive_merges = 32;

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
  db->NoteRangeTombstones();
  return db;
}

}  // namespace kspool::wal
