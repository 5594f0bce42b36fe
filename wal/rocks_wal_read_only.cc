// RocksWal for operator tools (kspoolctl): the read-only open and the read-only view
// (Options::read_only). Replaying and purging dead letters: rocks_wal_dead_admin.cc.
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
#include "wal/rocks_status.h"
#include "wal/settled_bits_merge.h"

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
  absl::StatusOr<bool> AppendKept(uint64_t) const override { return Refused(); }
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
  bool RestoreReserve() override { return false; }
  Stats GetStats() const override { return wal_->GetStats(); }
  Report GetReport() const override { return wal_->GetReport(); }
  std::string agent_id() const override { return wal_->agent_id(); }
  absl::Status health() const override { return wal_->health(); }
  absl::Status Reopen() override { return Refused(); }
  uint64_t reopens() const override { return 0; }
  uint64_t rescan_from() const override { return 0; }
  absl::StatusOr<std::vector<RoutingBound>> RoutingBounds(const std::string& topic) override {
    return wal_->RoutingBounds(topic);
  }
  absl::StatusOr<std::vector<RoutingBound>> SaveRoutingBound(const std::string&,
                                                             RoutingBound) override {
    return Refused();
  }
  absl::Status ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                               std::vector<DeadLetter>* out) override {
    return wal_->ScanDeadLetters(from_seq, max_entries, out);
  }
  absl::StatusOr<BitmapCheck> CheckBitmaps() override { return wal_->CheckBitmaps(); }
  absl::Status CountLive(std::map<std::string, Counts>* out) override {
    return wal_->CountLive(out);
  }
  absl::StatusOr<std::optional<Entry>> Newest() override { return wal_->Newest(); }
  absl::StatusOr<std::vector<ReplayedEntry>> ReplayDeadLetters(
      const std::vector<uint64_t>&) override {
    return Refused();
  }
  absl::Status PurgeDeadLetters(const std::vector<uint64_t>&) override { return Refused(); }
  absl::Status LookupDeliveries(const std::vector<uint64_t>& seqs,
                                std::vector<Outcome>* out) override {
    return wal_->LookupDeliveries(seqs, out);
  }
  absl::Status ScanDeliveries(uint64_t from_seq, size_t max_entries, std::vector<Outcome>* out,
                              uint64_t* next) override {
    return wal_->ScanDeliveries(from_seq, max_entries, out, next);
  }
  absl::StatusOr<DeliveryTally> DeliveryTallyOf(const std::string& topic,
                                                int32_t partition) override {
    return wal_->DeliveryTallyOf(topic, partition);
  }
  absl::StatusOr<DeliveryTrim> TrimDeliveries() override { return Refused(); }
  absl::StatusOr<std::vector<Watermark>> Watermarks() override { return wal_->Watermarks(); }
  absl::StatusOr<std::vector<Watermark>> WatermarksOf(std::string_view topic) override {
    return wal_->WatermarksOf(topic);
  }

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
  rocksdb::ColumnFamilyOptions meta_opts;
  meta_opts.merge_operator = SettledBitsMerge();  // the bitmaps' operands
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, {}}, {"log", {}}, {"meta", meta_opts}, {"dead", {}}};
  // A WAL written before the delivery index existed has none: every outcome is unknown.
  const bool has_delivery = present.count("delivery") > 0;
  if (has_delivery) cfs.push_back({"delivery", {}});
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
  if (has_delivery) db->delivery = db->handles[4];
  db->NoteRangeTombstones();
  return db;
}

}  // namespace kspool::wal
