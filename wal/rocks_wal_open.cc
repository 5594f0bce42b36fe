// RocksWal: opening, recovery of the in-memory state from `meta`, stats, commit points.
#include <random>

#include "rocksdb/convenience.h"
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

namespace kspool::wal {
namespace {

constexpr int kFormatVersion = 1;

std::string RandomAgentId() {
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

absl::StatusOr<std::unique_ptr<Wal>> Wal::Open(Options options) {
  return RocksWal::Open(std::move(options));
}

Counts TopicStats::pending() const {
  Counts p = accepted;
  p.count -= delivered.count;
  p.bytes -= delivered.bytes;
  for (const auto& [reason, c] : discarded) {
    p.count -= c.count;
    p.bytes -= c.bytes;
  }
  return p;
}

absl::StatusOr<std::unique_ptr<Wal>> RocksWal::Open(Options options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("WAL directory is empty");
  std::unique_ptr<RocksWal> wal(new RocksWal(std::move(options)));
  RETURN_IF_ERROR(wal->Recover());
  return std::unique_ptr<Wal>(std::move(wal));
}

RocksWal::~RocksWal() {
  if (!db_) return;
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  db_->Close().PermitUncheckedError();
}

absl::Status RocksWal::Recover() {
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.max_background_jobs = 2;
  db_opts.keep_log_file_num = 5;
  db_opts.avoid_flush_during_shutdown = true;  // the log replays; exit fast
  if (options_.env) db_opts.env = options_.env.get();

  rocksdb::ColumnFamilyOptions log_opts;
  log_opts.write_buffer_size = 64 << 20;
  log_opts.max_write_buffer_number = 3;
  log_opts.compression = rocksdb::kLZ4Compression;
  rocksdb::ColumnFamilyOptions small_opts;
  small_opts.write_buffer_size = 4 << 20;

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, small_opts},
      {"log", log_opts},
      {"meta", small_opts},
      {"dead", small_opts}};
  rocksdb::DB* db = nullptr;
  RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(db_opts, options_.dir, cfs, &handles_, &db),
                            "open WAL " + options_.dir));
  db_.reset(db);
  log_ = handles_[1];
  meta_ = handles_[2];
  dead_ = handles_[3];
  return LoadMeta();
}

absl::Status RocksWal::LoadMeta() {
  auto get = [&](std::string_view key, std::string* v) -> absl::StatusOr<bool> {
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_, key, v);
    if (s.IsNotFound()) return false;
    RETURN_IF_ERROR(FromRocks(s, "read WAL meta " + std::string(key)));
    return true;
  };
  std::string v;
  rocksdb::WriteBatch init;
  ASSIGN_OR_RETURN(bool has_version, get(keys::kFormatVersion, &v));
  if (has_version) {
    int version = std::atoi(v.c_str());
    if (version > kFormatVersion) {
      return absl::FailedPreconditionError(
          "WAL " + options_.dir + " has format version " + v + "; this build reads up to " +
          std::to_string(kFormatVersion));
    }
  } else {
    init.Put(meta_, keys::kFormatVersion, std::to_string(kFormatVersion));
  }
  ASSIGN_OR_RETURN(bool has_id, get(keys::kAgentId, &agent_id_));
  if (!has_id) {
    agent_id_ = RandomAgentId();
    init.Put(meta_, keys::kAgentId, agent_id_);
  }
  if (init.Count() > 0) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    RETURN_IF_ERROR(FromRocks(db_->Write(wo, &init), "initialize WAL meta"));
  }

  MutexLock l(&mu_);
  ASSIGN_OR_RETURN(bool has_next, get(keys::kNextSeq, &v));
  if (has_next) next_seq_ = std::max<uint64_t>(1, keys::ParseU64(v));
  ASSIGN_OR_RETURN(bool has_last, get(keys::kLastReceive, &v));
  if (has_last) last_receive_ms_ = static_cast<int64_t>(keys::ParseU64(v));
  ASSIGN_OR_RETURN(bool has_cp, get(keys::kCommitPoint, &v));
  if (has_cp) saved_points_.global_ms = static_cast<int64_t>(keys::ParseU64(v));

  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    std::string_view val(it->value().data(), it->value().size());
    if (StartsWith(k, keys::kCommitPointTopicPrefix)) {
      saved_points_.topics_ms[std::string(k.substr(keys::kCommitPointTopicPrefix.size()))] =
          static_cast<int64_t>(keys::ParseU64(val));
    } else if (StartsWith(k, keys::kAcceptedPrefix)) {
      topics_[std::string(k.substr(keys::kAcceptedPrefix.size()))].accepted =
          keys::ParseCounts(val);
    } else if (StartsWith(k, keys::kDeliveredPrefix)) {
      topics_[std::string(k.substr(keys::kDeliveredPrefix.size()))].delivered =
          keys::ParseCounts(val);
    } else if (StartsWith(k, keys::kDiscardedPrefix)) {
      std::string_view rest = k.substr(keys::kDiscardedPrefix.size());
      size_t slash = rest.find('/');
      if (slash == std::string_view::npos) continue;
      topics_[std::string(rest.substr(0, slash))]
          .discarded[std::string(rest.substr(slash + 1))] = keys::ParseCounts(val);
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "read WAL meta"));
  it.reset();

  // The log's own last key is authoritative if meta somehow lags behind it.
  std::unique_ptr<rocksdb::Iterator> log_it(db_->NewIterator(rocksdb::ReadOptions(), log_));
  log_it->SeekToLast();
  if (log_it->Valid()) next_seq_ = std::max(next_seq_, keys::ParseSeq(log_it->key().ToString()) + 1);
  log_it->SeekToFirst();
  RETURN_IF_ERROR(FromRocks(log_it->status(), "read WAL log"));
  committed_next_ = next_seq_;
  head_ = log_it->Valid() ? keys::ParseSeq(log_it->key().ToString()) : committed_next_;

  int64_t max_point = saved_points_.global_ms;
  for (const auto& [t, ms] : saved_points_.topics_ms) max_point = std::max(max_point, ms);
  receive_floor_ms_ = std::max(last_receive_ms_, max_point + 1);
  return absl::OkStatus();
}

absl::Status RocksWal::health() const {
  MutexLock l(&mu_);
  return write_error_;
}

Stats RocksWal::GetStats() const {
  Stats s;
  uint64_t head, limit;
  {
    MutexLock l(&mu_);
    s.next_seq = next_seq_;
    s.agent_id = agent_id_;
    s.topics = topics_;
    s.fsyncs = fsyncs_;
    s.appends = appends_;
    head = head_;
    limit = committed_next_;
  }
  for (const auto& [t, ts] : s.topics) {
    Counts p = ts.pending();
    s.entries += p.count;
    s.bytes += p.bytes;
  }
  if (s.entries > 0) s.oldest_seq = FirstLiveAtOrAfter(head, limit);
  return s;
}

CommitPoints RocksWal::SavedCommitPoints() const {
  MutexLock l(&mu_);
  return saved_points_;
}

absl::Status RocksWal::SaveCommitPoints(const CommitPoints& points) {
  rocksdb::WriteBatch wb;
  wb.Put(meta_, keys::kCommitPoint, keys::U64(static_cast<uint64_t>(points.global_ms)));
  int64_t max_point = points.global_ms;
  for (const auto& [topic, ms] : points.topics_ms) {
    wb.Put(meta_, keys::TopicCommitPoint(topic), keys::U64(static_cast<uint64_t>(ms)));
    max_point = std::max(max_point, ms);
  }
  {
    // Raise the floor before the points can be seen, so no later receive time is <= them.
    MutexLock l(&mu_);
    receive_floor_ms_ = std::max(receive_floor_ms_, max_point + 1);
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  RETURN_IF_ERROR(FromRocks(db_->Write(wo, &wb), "save commit points"));
  MutexLock l(&mu_);
  saved_points_ = points;
  return absl::OkStatus();
}

absl::Status RocksWal::CompactDeadRange() {
  uint64_t head;
  {
    MutexLock l(&mu_);
    head = head_;
  }
  std::string end = keys::Seq(head);
  rocksdb::Slice end_slice(end);
  rocksdb::CompactRangeOptions opts;
  return FromRocks(db_->CompactRange(opts, log_, nullptr, &end_slice), "compact WAL dead range");
}

}  // namespace kspool::wal
