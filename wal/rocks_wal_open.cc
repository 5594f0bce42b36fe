// RocksWal: opening, reopening after a write error, and the in-memory state recovered
// from `meta`. Opening never scans the log: startup time does not grow with the backlog.
#include <unistd.h>

#include <random>

#include "wal/keys.h"
#include "wal/log_cursor.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_wal_meta.h"
#include "wal/wal_dir.h"

namespace kspool::wal {
namespace {

// 3: `settled_in/` bitmaps are written as merge operands (settled_bits_merge.h); 2: the
// log holds batch records (FORMAT.md, "Batch records"); 1: one key per message. This
// build reads all three and writes version 3, so its first read-write open of an older
// WAL raises the number (an older build then refuses the directory).
constexpr int kFormatVersion = 3;

std::string RandomAgentId() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(Options options) {
  return RocksWal::Open(std::move(options));
}

void TopicStats::Add(const TopicStats& o) {
  accepted.Add(o.accepted);
  delivered.Add(o.delivered);
  held.Add(o.held);
  for (const auto& [reason, c] : o.discarded) discarded[reason].Add(c);
  for (const auto& [limit, c] : o.dead_dropped) dead_dropped[limit].Add(c);
}

Counts TopicStats::pending() const {
  // Saturates: counters that disagree (a bug, or a corrupt record counted under another
  // topic) must not make a topic look almost infinitely full.
  Counts p = accepted;
  auto sub = [](uint64_t* v, uint64_t d) { *v -= std::min(*v, d); };
  sub(&p.count, delivered.count);
  sub(&p.bytes, delivered.bytes);
  for (const auto& [reason, c] : discarded) {
    sub(&p.count, c.count);
    sub(&p.bytes, c.bytes);
  }
  return p;
}

absl::StatusOr<std::unique_ptr<Wal>> RocksWal::Open(Options options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("WAL directory is empty");
  if (options.max_group_requests == 0 || options.max_group_bytes == 0) {
    return absl::InvalidArgumentError("group commit limits must be positive");
  }
  // At the first open only: a reopen after an I/O error must not turn into a refusal.
  if (!options.read_only) RETURN_IF_ERROR(PrepareWalDir(options.dir));
  std::unique_ptr<RocksWal> wal(new RocksWal(std::move(options)));
  MutexLock settle(&wal->settle_mu_);
  WriterLock l(&wal->db_mu_);
  ASSIGN_OR_RETURN(wal->db_, wal->OpenDatabase());
  RETURN_IF_ERROR(wal->LoadState(/*reopen=*/false));
  if (wal->options_.read_only) return ReadOnlyView(std::move(wal));
  wal->committer_.Start(&wal->mu_, wal.get());
  return std::unique_ptr<Wal>(std::move(wal));
}

absl::StatusOr<std::unique_ptr<OpenDb>> RocksWal::OpenDatabase() {
  if (options_.read_only) return OpenDatabaseReadOnly();
  if (reserve_) {
    // RocksDB's CURRENT names the manifest: without it, no WAL was ever opened here.
    const bool first_start = access((options_.dir + "/CURRENT").c_str(), F_OK) != 0;
    bool out_of_space = false;
    {
      MutexLock l(&mu_);
      out_of_space = out_of_space_ && !write_error_.ok();
    }
    RETURN_IF_ERROR(reserve_->BeforeOpen(first_start, out_of_space));
  }
  return OpenDb::Open(options_.dir, options_.env.get(), info_log_, options_.reserve_bytes / 2,
                      options_.max_bytes);
}

absl::Status RocksWal::LoadState(bool reopen) {
  rocksdb::DB* db = db_->db.get();
  rocksdb::ColumnFamilyHandle* meta = db_->meta;  // lambdas are outside the lock analysis
  auto get = [&](std::string_view key, std::string* v) -> absl::StatusOr<bool> {
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, key, v);
    if (s.IsNotFound()) return false;
    RETURN_IF_ERROR(FromRocks(s, "read WAL meta " + std::string(key)));
    return true;
  };
  std::string v;
  rocksdb::WriteBatch init;
  ASSIGN_OR_RETURN(bool has_version, get(keys::kFormatVersion, &v));
  if (has_version) {
    if (std::atoi(v.c_str()) > kFormatVersion) {
      return absl::FailedPreconditionError(
          "WAL " + options_.dir + " has format version " + v + "; this build reads up to " +
          std::to_string(kFormatVersion));
    }
    if (std::atoi(v.c_str()) < kFormatVersion && !options_.read_only) {
      init.Put(db_->meta, keys::kFormatVersion, std::to_string(kFormatVersion));
    }
  } else {
    if (options_.read_only) return NotAKspoolWal(options_.dir, "no format_version in its meta");
    init.Put(db_->meta, keys::kFormatVersion, std::to_string(kFormatVersion));
  }
  // The agent id is fixed for the life of this object: Kafka records carry it, so that
  // consumers can drop replayed duplicates. agent_id() may be read concurrently.
  const std::string current_id = reopen ? agent_id() : std::string();
  std::string id;
  ASSIGN_OR_RETURN(bool has_id, get(keys::kAgentId, &id));
  if (!has_id) {
    if (options_.read_only) return NotAKspoolWal(options_.dir, "no agent_id in its meta");
    id = reopen ? current_id : RandomAgentId();
    init.Put(db_->meta, keys::kAgentId, id);
  } else if (reopen && id != current_id) {
    return absl::FailedPreconditionError("WAL " + options_.dir + " now has agent id " + id +
                                         ", not " + current_id + "; it was replaced");
  }
  if (init.Count() > 0) RETURN_IF_ERROR(FromRocks(SyncedWrite(&init), "initialize WAL meta"));

  ASSIGN_OR_RETURN(MetaState m, ReadMeta(db, meta, db_->IteratorOptions(meta)));
  uint64_t next_seq = m.next_seq;
  int64_t last_receive = m.last_receive;
  CommitPoints points = std::move(m.points);
  // What a WAL written before some totals were kept lacks: found once, and saved.
  rocksdb::WriteBatch once;
  if (!m.dead) {
    ASSIGN_OR_RETURN(m.dead, CountDeadLetters(db, db_->dead, db_->IteratorOptions(db_->dead)));
    once.Put(meta, keys::kDeadLetters, keys::EncodeCounts(*m.dead));
  }

  // The log's own last key is authoritative if meta somehow lags behind it.
  std::unique_ptr<rocksdb::Iterator> log_it(
      db->NewIterator(db_->IteratorOptions(db_->log), db_->log));
  // Each positioning is checked before the next one resets the iterator's status: an
  // iterator stopped by a read error is not Valid() either, and taking that for an empty
  // log would reuse sequence numbers (the last key) or put the head past live entries
  // (the first key). The open fails instead, naming the WAL; the caller retries.
  const std::string read_log = "WAL " + options_.dir + ": read the log";
  log_it->SeekToLast();
  RETURN_IF_ERROR(FromRocks(log_it->status(), read_log + " (its last entry)"));
  // A batch record's key starts with its last sequence number, as a version-1 key is one.
  if (log_it->Valid()) next_seq = std::max(next_seq, keys::ParseSeq(log_it->key().ToString()) + 1);
  // Entries below the persisted head are settled. Each settle deletes its own entries in
  // its batch, so only a WAL written by an older version (whose trailing range delete
  // had not caught up when it stopped) still stores some: they go here, key by key
  // (never a range tombstone: FORMAT.md, "Deletes"), once. Later opens skip this walk
  // over the settled prefix's tombstones, so that startup does not grow with them.
  ASSIGN_OR_RETURN(const bool none_below_head, get(keys::kNoneBelowHead, &v));
  if (!options_.read_only && !none_below_head) {
    once.Put(meta, keys::kNoneBelowHead, "1");
  }
  if (!options_.read_only && !none_below_head && m.head > 0) {
    const std::string below = keys::Seq(m.head);
    const rocksdb::Slice below_s(below);
    rocksdb::ReadOptions ro = db_->IteratorOptions(db_->log);
    ro.iterate_upper_bound = &below_s;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, db_->log));
    for (it->SeekToFirst(); it->Valid(); it->Next()) once.Delete(db_->log, it->key());
    RETURN_IF_ERROR(FromRocks(it->status(), read_log + " (below its head)"));
  }
  LogCursor live(*db_, {m.head, UINT64_MAX});
  live.Seek(m.head);
  RETURN_IF_ERROR(live.status(read_log + " (its first live entry, at or after the head " +
                              std::to_string(m.head) + ")"));
  std::optional<uint64_t> first;
  if (live.Valid()) first = live.seq();

  // The delivery index starts at the head: what was settled before it existed is unknown.
  const uint64_t head = first.value_or(next_seq);
  if (!m.delivery_floor) {
    m.delivery_floor = head;
    once.Put(meta, keys::kDeliveryFloor, keys::U64(head));
    once.Put(meta, keys::kDeliveryIndex, keys::EncodeCounts(m.delivery_index));
  }
  if (once.Count() > 0 && !options_.read_only) {
    RETURN_IF_ERROR(FromRocks(SyncedWrite(&once), "save the totals of an older WAL"));
  }

  CommitPoints start;
  {
    MutexLock l(&mu_);
    agent_id_ = std::move(id);
    if (reopen) {
      // The log on disk ends before next_seq: the appends whose write failed before
      // this reopen were kept if they start below it.
      in_doubt_.Resolve(next_seq);
      // Never hand out a number twice, even one whose failed write did not persist.
      next_seq = std::max(next_seq, tail_.next_seq());
      last_receive = std::max(last_receive, tail_.last_receive_ms());
    }
    tail_.Load(next_seq, last_receive);
    ledger_.Load(std::move(m.topics), first.value_or(tail_.committed_next()));
    known_gaps_.Reset(tail_.committed_next(), ledger_.head());
    report_.Clear();
    for (const auto& [k, val] : m.split) report_.Load(k, val);
    dead_letters_.Load(*m.dead);
    delivery_index_.Load(m.delivery_index, *m.delivery_floor);
    lease_.SetDurable(points);
    ledger_.TrackAtOpen(reopen, m.last_append, tail_.Now(options_.clock->NowMillis()), &points);
    // Disk only, also on a reopen: memory may hold none but durable maxima. Untracked
    // topics' stay on disk until a settle needs them.
    watermarks_.Load(m.watermarks, ledger_.TrackedTopics());
    tallies_.Clear();  // read again from disk as settles need them
    if (reopen) {
      // Memory knows every point published; the log may hold more (a commit-point batch
      // whose failed sync RocksDB kept, with its split folded): the higher one wins.
      lease_.Reopen(points, m.ceiling);
      report_.set_point_ms(std::max(report_.point_ms(), m.report_point));
    } else {
      lease_.Open(points, m.ceiling, ledger_.topics());
      report_.set_point_ms(m.report_point);
    }
    tail_.RaiseFloor(
        std::max({tail_.last_receive_ms(), HighestPoint(lease_.saved()) + 1, m.receive_floor}));
    write_error_ = absl::OkStatus();
    if (!report_.FoldsAt(lease_.saved().global_ms)) {
      report_.set_point_ms(report_.PointAt(lease_.saved().global_ms));
      return absl::OkStatus();
    }
    start = lease_.saved();
  }
  // Settled messages at or before the starting global point move into the report's
  // cumulative counts, so that the report matches its commit point.
  if (!options_.read_only) return WriteCommitPoints(start, /*closing=*/false);
  rocksdb::WriteBatch unused;
  ReportSplit::Fold fold;
  MutexLock l(&mu_);
  report_.PlanFold(start.global_ms, db_->meta, &unused, &fold);
  report_.Apply(std::move(fold));
  return absl::OkStatus();
}

absl::Status RocksWal::Reopen() {
  MutexLock settle(&settle_mu_);
  WriterLock w(&db_mu_);
  {
    MutexLock l(&mu_);
    if (write_error_.ok() && db_) return absl::OkStatus();
  }
  db_.reset();  // close first: RocksDB holds a lock on the directory
  absl::StatusOr<std::unique_ptr<OpenDb>> db = OpenDatabase();
  if (!db.ok()) return db.status();
  db_ = std::move(db).value();
  RETURN_IF_ERROR(LoadState(/*reopen=*/true));
  deleted_above_head_.clear();
  MutexLock l(&mu_);
  ++reopens_;
  rescan_from_ = doubt_from_.value_or(tail_.committed_next());
  doubt_from_.reset();
  return absl::OkStatus();
}

std::string RocksWal::agent_id() const {
  MutexLock l(&mu_);
  return agent_id_;
}

uint64_t RocksWal::reopens() const {
  MutexLock l(&mu_);
  return reopens_;
}

uint64_t RocksWal::rescan_from() const {
  MutexLock l(&mu_);
  return rescan_from_;
}

absl::Status RocksWal::ClosedError() const {
  return absl::UnavailableError("WAL " + options_.dir + " is closed after an I/O error; reopening");
}

bool RocksWal::RestoreReserve() { return reserve_ && reserve_->Restore(); }

absl::Status RocksWal::health() const {
  MutexLock l(&mu_);
  return write_error_;
}

}  // namespace kspool::wal
