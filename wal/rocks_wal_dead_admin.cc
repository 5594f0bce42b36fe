// RocksWal for operator tools (kspoolctl): moving dead letters back into the log
// (replay) or deleting them (purge). Both keep the dead letters' totals
// (`dead_letters`) in the same synced batch as the change to `dead`.
#include <chrono>
#include <set>
#include <thread>

#include "wal/dead_letter.h"
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

void RocksWal::LockWithNoGroupCommit() {
  // A group being written stays at the queue's head until it is done. Operator commands
  // are rare and normally run with no agent on the WAL, so polling is good enough.
  mu_.Lock();
  while (!committer_.idle(&mu_)) {
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
  const Counts before = dead_letters_.totals();
  const Counts dead = {before.count - std::min(before.count, revived.count),
                       before.bytes - std::min(before.bytes, revived.bytes)};
  if (options_.max_bytes > 0 && ledger_.live_bytes() + dead.bytes + bytes > options_.max_bytes) {
    const uint64_t in_use = ledger_.live_bytes() + before.bytes;
    mu_.Unlock();
    return absl::ResourceExhaustedError("WAL full: replaying needs " + std::to_string(bytes) +
                                        " bytes, " + std::to_string(in_use) + " of " +
                                        std::to_string(options_.max_bytes) + " are in use");
  }
  const int64_t receive_ms = tail_.NextReceiveTime(options_.clock->NowMillis());
  std::vector<ReplayedEntry> replayed;
  rocksdb::WriteBatch wb;
  uint64_t seq = tail_.next_seq();
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
    Counts total = ledger_.accepted(topic);
    total.count += c.count;
    total.bytes += c.bytes;
    accepted[topic] = total;
    wb.Put(db_->meta, keys::Accepted(topic), keys::EncodeAccepted(total, receive_ms));
  }
  wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  wb.Put(db_->meta, keys::kNextSeq, keys::U64(seq));
  wb.Put(db_->meta, keys::kLastReceive, keys::U64(static_cast<uint64_t>(receive_ms)));
  // The topics get live entries; those without a point get their first (CommitGroup).
  CommitPoints leased = lease_.LeasedFor(added);
  lease_.PlanFirstPoints(added, receive_ms, ledger_.topics(), &leased);
  CommitLease::PutLeased(leased, db_->meta, &wb);
  // mu_ stays held across the write: no group commit can take sequence numbers meanwhile.
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteErrorLocked(s, "dead-letter replay");
    mu_.Unlock();
    return FromRocks(s, "replay dead letters");
  }
  tail_.WrittenUpTo(seq);
  lease_.NoteDurable(leased);
  lease_.SavedFirst(leased);
  ledger_.NoteAccepted(accepted, bytes);
  ledger_.Touch(accepted, receive_ms);
  dead_letters_.SetTotals(dead);
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
    // The totals change only under settle_mu_, which this holds.
    const Counts before = dead_letters_.totals();
    dead = {before.count - std::min(before.count, purged.count),
            before.bytes - std::min(before.bytes, purged.bytes)};
  }
  wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "dead-letter purge");
    return FromRocks(s, "purge dead letters");
  }
  MutexLock l(&mu_);
  dead_letters_.SetTotals(dead);
  return absl::OkStatus();
}

}  // namespace kspool::wal
