// RocksWal for operator tools (kspoolctl): the read-only open, the newest entry, and
// moving dead letters back into the log (replay) or deleting them (purge).
//
// Read-only opening must leave the directory exactly as it was: a running agent may own
// it, or it is the only copy of a dead container's spool. So no info log is written
// into it, nothing is created, and a directory that is not a kspool WAL is refused
// before RocksDB's own, less helpful, errors.
#include <chrono>
#include <set>
#include <thread>

#include "rocksdb/env.h"
#include "wal/dead_letter.h"
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

namespace kspool::wal {
namespace {

// RocksDB would otherwise rotate the LOG file of the directory it opens.
class NoInfoLog final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

// Forwards reads; refuses every write.
class ReadOnlyWal final : public Wal {
 public:
  explicit ReadOnlyWal(std::unique_ptr<RocksWal> wal, std::string dir)
      : wal_(std::move(wal)), dir_(std::move(dir)) {}

  void AppendAsync(AppendBatch, AppendCallback done) override { std::move(done)(Refused()); }
  absl::Status Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                    std::vector<Entry>* out) override {
    return wal_->Scan(from_seq, max_entries, max_bytes, out);
  }
  absl::Status ScanChoosing(const ScanRange& range,
                            const std::function<ScanChoice(const ScanCandidate&)>& choose,
                            std::vector<Entry>* out, uint64_t* next) override {
    return wal_->ScanChoosing(range, choose, out, next);
  }
  absl::Status Settle(const std::vector<Outcome>&) override { return Refused(); }
  // Raises only an in-memory floor; nothing is written.
  absl::StatusOr<int64_t> ReceiveTimeBound(uint64_t from_seq) override {
    return wal_->ReceiveTimeBound(from_seq);
  }
  absl::Status SaveCommitPoints(const CommitPoints&) override { return Refused(); }
  CommitPoints SavedCommitPoints() const override { return wal_->SavedCommitPoints(); }
  absl::StatusOr<DeadLetterTrim> TrimDeadLetters() override { return Refused(); }
  std::vector<std::string> TrackedTopics() const override { return wal_->TrackedTopics(); }
  absl::StatusOr<std::vector<std::string>> ForgetIdleTopics() override { return Refused(); }
  absl::Status CompactDeadRange() override { return Refused(); }
  Stats GetStats() const override { return wal_->GetStats(); }
  Report GetReport() const override { return wal_->GetReport(); }
  std::string agent_id() const override { return wal_->agent_id(); }
  absl::Status health() const override { return wal_->health(); }
  absl::Status Reopen() override { return Refused(); }
  uint64_t reopens() const override { return 0; }
  absl::Status ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                               std::vector<DeadLetter>* out) override {
    return wal_->ScanDeadLetters(from_seq, max_entries, out);
  }
  absl::Status CountLive(std::map<std::string, Counts>* out) override {
    return wal_->CountLive(out);
  }
  absl::StatusOr<std::optional<Entry>> Newest() override { return wal_->Newest(); }
  absl::StatusOr<std::vector<ReplayedEntry>> ReplayDeadLetters(
      const std::vector<uint64_t>&) override {
    return Refused();
  }
  absl::Status PurgeDeadLetters(const std::vector<uint64_t>&) override { return Refused(); }

 private:
  absl::Status Refused() const {
    return absl::FailedPreconditionError("WAL " + dir_ + " is open read-only");
  }

  std::unique_ptr<RocksWal> wal_;
  std::string dir_;
};

}  // namespace

absl::Status NotAKspoolWal(const std::string& dir, const std::string& why) {
  return absl::FailedPreconditionError(dir + " is not a kspool WAL: " + why);
}

std::unique_ptr<Wal> RocksWal::ReadOnlyView(std::unique_ptr<RocksWal> wal) {
  std::string dir = wal->options_.dir;
  return std::make_unique<ReadOnlyWal>(std::move(wal), std::move(dir));
}

absl::StatusOr<std::unique_ptr<OpenDb>> RocksWal::OpenDatabaseReadOnly() const {
  const std::string& dir = options_.dir;
  rocksdb::DBOptions db_opts;
  if (options_.env) db_opts.env = options_.env.get();
  db_opts.info_log = std::make_shared<NoInfoLog>();
  // Open every table file now: a running agent's compactions then cannot delete a file
  // under a long scan (the open descriptors keep it readable).
  db_opts.max_open_files = -1;
  rocksdb::Env* env = db_opts.env;
  if (!env->FileExists(dir).ok()) return absl::NotFoundError("WAL directory " + dir + " does not exist");
  if (!env->FileExists(dir + "/CURRENT").ok()) {
    return NotAKspoolWal(dir, "no RocksDB database in it (no CURRENT file)");
  }
  std::vector<std::string> names;
  RETURN_IF_ERROR(FromRocks(rocksdb::DB::ListColumnFamilies(db_opts, dir, &names),
                            "list column families of " + dir));
  const std::set<std::string> present(names.begin(), names.end());
  for (const char* cf : {"log", "meta", "dead"}) {
    if (!present.count(cf)) {
      return NotAKspoolWal(dir, std::string("its RocksDB database has no column family '") + cf + "'");
    }
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, {}}, {"log", {}}, {"meta", {}}, {"dead", {}}};
  auto db = std::make_unique<OpenDb>();
  rocksdb::Status s;
  // A running agent may delete a file (a flushed RocksDB log, a compacted table) between
  // the moment the open reads the MANIFEST and the moment it opens the file: try again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    rocksdb::DB* raw = nullptr;
    db->handles.clear();
    s = rocksdb::DB::OpenForReadOnly(db_opts, dir, cfs, &db->handles, &raw);
    if (s.ok()) {
      db->db.reset(raw);
      break;
    }
    if (!s.IsIOError() && !s.IsCorruption()) break;
  }
  RETURN_IF_ERROR(FromRocks(s, "open WAL " + dir + " read-only"));
  db->log = db->handles[1];
  db->meta = db->handles[2];
  db->dead = db->handles[3];
  return db;
}

absl::StatusOr<std::optional<Entry>> RocksWal::Newest() {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t lower, upper;
  {
    MutexLock l(&mu_);
    lower = head_;
    upper = committed_next_;
  }
  if (lower >= upper) return std::nullopt;
  std::string lo = keys::Seq(lower), hi = keys::Seq(upper);
  rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(ro, db_->log));
  it->SeekToLast();
  RETURN_IF_ERROR(FromRocks(it->status(), "read the newest WAL entry"));
  if (!it->Valid()) return std::nullopt;
  return DecodeEntry(keys::ParseSeq(std::string_view(it->key().data(), it->key().size())),
                     std::string_view(it->value().data(), it->value().size()));
}

void RocksWal::LockWithNoGroupCommit() {
  // A group being written stays at the queue's head until it is done. Operator commands
  // are rare and normally run with no agent on the WAL, so polling is good enough.
  mu_.Lock();
  while (!queue_.empty()) {
    mu_.Unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    mu_.Lock();
  }
}

absl::StatusOr<std::vector<ReplayedEntry>> RocksWal::ReplayDeadLetters(
    const std::vector<uint64_t>& seqs) {
  const std::set<uint64_t> wanted(seqs.begin(), seqs.end());
  if (wanted.empty()) return std::vector<ReplayedEntry>{};
  MutexLock settle(&settle_mu_);  // serializes with Settle's writes to the dead letters
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  struct Revived {
    uint64_t dead_seq;
    std::string topic;
    std::string raw;
  };
  std::vector<Revived> records;         // in dead-letter sequence order
  std::map<std::string, Counts> added;  // by topic
  Counts revived;                       // leaving the dead letters
  for (uint64_t seq : wanted) {
    std::string v;
    rocksdb::Status s = db_->db->Get(rocksdb::ReadOptions(), db_->dead, keys::Seq(seq), &v);
    if (s.IsNotFound()) return absl::NotFoundError("no dead letter " + std::to_string(seq));
    RETURN_IF_ERROR(FromRocks(s, "read dead letter " + std::to_string(seq)));
    revived.count += 1;
    revived.bytes += v.size();
    ASSIGN_OR_RETURN(DeadLetter d, DecodeDeadLetter(seq, v));
    absl::StatusOr<Record> rec = DecodeRecord(d.raw);
    if (!rec.ok()) {
      return absl::FailedPreconditionError(
          "dead letter " + std::to_string(seq) + " (" + d.reason + ") holds no decodable record (" +
          rec.status().ToString() + "); it cannot be replayed, only purged");
    }
    Counts& c = added[rec->topic];
    c.count += 1;
    c.bytes += d.raw.size();
    records.push_back({seq, rec->topic, std::move(d.raw)});
  }

  LockWithNoGroupCommit();
  if (!write_error_.ok()) {
    absl::Status error = write_error_;
    mu_.Unlock();
    return error;
  }
  uint64_t bytes = 0;
  for (const auto& [topic, c] : added) bytes += c.bytes;
  // The revived dead letters leave the dead store in the same batch.
  const Counts dead = {dead_.count - std::min(dead_.count, revived.count),
                       dead_.bytes - std::min(dead_.bytes, revived.bytes)};
  if (options_.max_bytes > 0 && live_bytes_ + dead.bytes + bytes > options_.max_bytes) {
    const uint64_t in_use = live_bytes_ + dead_.bytes;
    mu_.Unlock();
    return absl::ResourceExhaustedError("WAL full: replaying needs " + std::to_string(bytes) +
                                        " bytes, " + std::to_string(in_use) + " of " +
                                        std::to_string(options_.max_bytes) + " are in use");
  }
  const int64_t receive_ms = NextReceiveTime();
  std::vector<ReplayedEntry> replayed;
  rocksdb::WriteBatch wb;
  uint64_t seq = next_seq_;
  for (Revived& rec : records) {
    // The payload stays byte for byte; only the receive time (and so the checksum) is
    // new, which keeps receive times non-decreasing along the log.
    SealRecord(receive_ms, &rec.raw);
    wb.Put(db_->log, keys::Seq(seq), rec.raw);
    wb.Delete(db_->dead, keys::Seq(rec.dead_seq));
    replayed.push_back({rec.dead_seq, seq, rec.topic, receive_ms});
    ++seq;
  }
  std::map<std::string, Counts> accepted;
  for (const auto& [topic, c] : added) {
    Counts total = topics_.count(topic) ? topics_[topic].accepted : Counts{};
    total.count += c.count;
    total.bytes += c.bytes;
    accepted[topic] = total;
    wb.Put(db_->meta, keys::Accepted(topic), keys::EncodeAccepted(total, receive_ms));
  }
  wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  wb.Put(db_->meta, keys::kNextSeq, keys::U64(seq));
  wb.Put(db_->meta, keys::kLastReceive, keys::U64(static_cast<uint64_t>(receive_ms)));
  const CommitPoints leased = LeasedPointsFor(added);  // the topics get live entries
  PutLeasedPoints(leased, &wb);
  // mu_ stays held across the write: no group commit can take sequence numbers meanwhile.
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteErrorLocked(s, "dead-letter replay");
    mu_.Unlock();
    return FromRocks(s, "replay dead letters");
  }
  next_seq_ = committed_next_ = seq;
  NoteDurable(leased);
  live_bytes_ += bytes;
  dead_ = dead;
  for (auto& [topic, c] : accepted) {
    topics_[topic].accepted = c;
    tracked_[topic] = receive_ms;
  }
  mu_.Unlock();
  return replayed;
}

absl::Status RocksWal::PurgeDeadLetters(const std::vector<uint64_t>& seqs) {
  const std::set<uint64_t> wanted(seqs.begin(), seqs.end());
  if (wanted.empty()) return absl::OkStatus();
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
  }
  rocksdb::WriteBatch wb;
  Counts purged;
  for (uint64_t seq : wanted) {
    std::string v;
    rocksdb::Status s = db_->db->Get(rocksdb::ReadOptions(), db_->dead, keys::Seq(seq), &v);
    if (s.IsNotFound()) return absl::NotFoundError("no dead letter " + std::to_string(seq));
    RETURN_IF_ERROR(FromRocks(s, "read dead letter " + std::to_string(seq)));
    wb.Delete(db_->dead, keys::Seq(seq));
    purged.count += 1;
    purged.bytes += v.size();
  }
  Counts dead;
  {
    MutexLock l(&mu_);  // dead_ changes only under settle_mu_, which this holds
    dead = {dead_.count - std::min(dead_.count, purged.count),
            dead_.bytes - std::min(dead_.bytes, purged.bytes)};
  }
  wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "dead-letter purge");
    return FromRocks(s, "purge dead letters");
  }
  MutexLock l(&mu_);
  dead_ = dead;
  return absl::OkStatus();
}

}  // namespace kspool::wal
