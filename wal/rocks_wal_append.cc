// RocksWal: durable appends with group commit. The queue and the committer thread are
// GroupCommitter's (group_committer.h); this is the write of one group: admission by
// the ledger, sequence numbers and one receive time from the tail, the entries with the
// meta updates (next seq, last receive, the topics' accepted totals, the leased points
// the topics now need) in one synced WriteBatch, then the take-over into memory.
#include <chrono>

#include "base/check.h"
#include "wal/keys.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

void RocksWal::RecordWriteError(const rocksdb::Status& s, std::string_view what) {
  MutexLock l(&mu_);
  RecordWriteErrorLocked(s, what);
}

void RocksWal::RecordWriteErrorLocked(const rocksdb::Status& s, std::string_view what) {
  // LevelDB's lesson: after a failed write or sync the log's state is unknown, so
  // nothing more is acknowledged until the WAL has been reopened and recovered.
  if (write_error_.ok()) {
    if (!doubt_from_) doubt_from_ = tail_.committed_next();
    out_of_space_ = s.IsNoSpace();
    write_error_ = absl::UnavailableError("WAL " + std::string(what) +
                                          " failed; no further appends are acknowledged until the "
                                          "WAL is reopened: " +
                                          s.ToString());
  }
}

void RocksWal::AppendAsync(AppendBatch batch, AppendCallback done) {
  if (batch.empty()) {
    std::move(done)(absl::InvalidArgumentError("append of an empty batch"));
    return;
  }
  batch.Finish();  // the last record is encoded here, not on the committer thread
  absl::Status refused;
  // The reserve was released for an open on a full volume: the room left is for draining.
  const bool no_reserve = reserve_ && reserve_->missing();
  {
    MutexLock l(&mu_);
    refused = write_error_;
    if (refused.ok() && no_reserve) {
      refused = reserve_->RefusalStatus();
      ledger_.CountRefused(Ledger::kNoReserve);
    } else if (refused.ok()) {
      refused = committer_.Enqueue(&mu_, batch, done);
      if (refused.ok()) return;
      if (absl::IsResourceExhausted(refused)) ledger_.CountRefused(Ledger::kQueueFull);
    }
  }
  std::move(done)(refused);
}

absl::StatusOr<bool> RocksWal::AppendKept(uint64_t first_seq) const {
  MutexLock l(&mu_);
  if (!write_error_.ok()) {
    return absl::UnavailableError("WAL " + options_.dir +
                                  ": the outcome of a failed append is known once it is reopened");
  }
  return in_doubt_.Kept(first_seq);
}

RocksWal::~RocksWal() {
  committer_.Stop();  // commits what is queued
  CloseCommitPoints();
}

size_t RocksWal::CommitGroup() {
  GroupCommitter::Group group;
  std::map<std::string, uint64_t> group_topics;  // bytes per topic admitted so far
  while (GroupCommitter::Writer* w = committer_.NextForGroup(&mu_, &group)) {
    if (write_error_.ok()) {
      w->status = ledger_.Admit(w->batch, group.bytes, dead_letters_.totals().bytes, &group_topics);
      if (!w->status.ok()) continue;
    }
    group.Add(w);
  }
  absl::Status status = write_error_;
  const int64_t receive_ms = tail_.NextReceiveTime(options_.clock->NowMillis());
  const uint64_t first_seq = tail_.next_seq();
  std::map<std::string, Counts> accepted;  // new totals of the group's topics
  for (GroupCommitter::Writer* w : group.writers) {
    w->result.first_seq = tail_.Take(w->batch.size());
    w->result.receive_time_ms = receive_ms;
    for (const auto& [topic, delta] : w->batch.topics()) {
      auto it = accepted.find(topic);
      if (it == accepted.end()) it = accepted.emplace(topic, ledger_.accepted(topic)).first;
      it->second.count += delta.first;
      it->second.bytes += delta.second;
    }
  }
  const uint64_t end_seq = tail_.next_seq();
  tail_.Writing(receive_ms);
  if (status.ok()) ledger_.Touch(accepted, receive_ms);
  // Taken with the writing receive time: a lease granted after this waits for the group.
  // With them, the first points of the topics that have none (new, or forgotten): a
  // returning topic's point must not start below what it published before it was
  // forgotten, also after a crash before its next point is written.
  CommitPoints leased = lease_.LeasedFor(accepted);
  if (status.ok()) lease_.PlanFirstPoints(accepted, receive_ms, ledger_.topics(), &leased);

  bool in_doubt = false;  // the group's write reached RocksDB and failed
  if (status.ok() && !group.writers.empty()) {
    KSPOOL_DCHECK(writing_topics_ == nullptr);  // one committer
    writing_topics_ = &accepted;
    mu_.Unlock();
    rocksdb::Status s;
    bool attempted = false;
    {
      ReaderLock r(&db_mu_);
      if (!db_) {
        s = rocksdb::Status::IOError("WAL is closed");
      } else {
        rocksdb::WriteBatch wb(group.bytes + 64 * group.writers.size() + 256);
        uint64_t seq = first_seq;
        for (GroupCommitter::Writer* w : group.writers) {
          for (AppendBatch::Unsealed& rec : w->batch.records()) {
            SealRecord(receive_ms, &rec.bytes);
            wb.Put(db_->log, BatchKey(seq, rec.count), rec.bytes);
            seq += rec.count;
          }
        }
        wb.Put(db_->meta, keys::kNextSeq, keys::U64(end_seq));
        wb.Put(db_->meta, keys::kLastReceive, keys::U64(static_cast<uint64_t>(receive_ms)));
        for (const auto& [topic, c] : accepted) {
          wb.Put(db_->meta, keys::Accepted(topic), keys::EncodeAccepted(c, receive_ms));
        }
        CommitLease::PutLeased(leased, db_->meta, &wb);
        auto start = std::chrono::steady_clock::now();
        attempted = true;
        s = SyncedWrite(&wb);
        if (s.ok() && options_.on_group_commit) {
          options_.on_group_commit(
              end_seq - first_seq,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
      }
    }
    mu_.Lock();
    writing_topics_ = nullptr;
    if (s.ok()) {
      tail_.CountGroup(group.writers.size(), end_seq - first_seq);
      lease_.NoteDurable(leased);
      lease_.SavedFirst(leased);
      ledger_.NoteAccepted(accepted, group.bytes);
    } else {
      RecordWriteErrorLocked(s, "append");
      status = write_error_;
      in_doubt = attempted;
    }
  }
  tail_.Committed(end_seq);
  for (GroupCommitter::Writer* w : group.writers) {
    if (in_doubt) {
      // RocksDB may have kept the write: the outcome is known after the reopen.
      in_doubt_.Failed(w->result.first_seq);
      w->status = MarkAppendInDoubt(status, w->result.first_seq);
    } else {
      w->status = status;
    }
  }
  return group.examined;
}

}  // namespace kspool::wal
