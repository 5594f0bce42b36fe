// RocksWal: durable appends with group commit.
//
// Appends queue under mu_. One committer thread takes the queue's first requests
// (bounded by bytes and count), assigns their sequence numbers and one receive time,
// drops mu_, writes them with the meta updates in one synced WriteBatch, then runs
// their callbacks. Appends that arrive during the fsync queue up and form the next,
// larger group: batches grow with load, and no caller's thread waits on the disk. With
// Options::group_commit_delay_us the committer also waits that long after the first
// append of a group, so that groups grow at moderate load too.
#include <pthread.h>

#include <chrono>

#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

int64_t RocksWal::NextReceiveTime() {
  int64_t t = std::max({options_.clock->NowMillis(), last_receive_ms_, receive_floor_ms_});
  last_receive_ms_ = t;
  return t;
}

void RocksWal::RecordWriteError(const rocksdb::Status& s, std::string_view what) {
  MutexLock l(&mu_);
  RecordWriteErrorLocked(s, what);
}

void RocksWal::RecordWriteErrorLocked(const rocksdb::Status& s, std::string_view what) {
  // LevelDB's lesson: after a failed write or sync the log's state is unknown, so
  // nothing more is acknowledged until the WAL has been reopened and recovered.
  if (write_error_.ok()) {
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
  absl::Status refused;
  {
    MutexLock l(&mu_);
    refused = write_error_;
    if (refused.ok() && stopping_) refused = absl::UnavailableError("WAL is closing");
    if (refused.ok()) refused = AdmitToQueue(batch);
    if (refused.ok()) {
      queued_bytes_ += batch.bytes();
      queue_.push_back(Writer{std::move(batch), std::move(done), {}, {}});
      if (!gathering_ || GroupFull()) work_cv_.Signal();
      return;
    }
  }
  std::move(done)(refused);
}

RocksWal::~RocksWal() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    work_cv_.SignalAll();
  }
  if (committer_.joinable()) committer_.join();
  CloseCommitPoints();
}

void RocksWal::CommitLoop() {
  pthread_setname_np(pthread_self(), "kspool-walsync");
  mu_.Lock();
  while (true) {
    while (queue_.empty() && !stopping_) work_cv_.Wait(&mu_);
    if (queue_.empty()) break;
    if (options_.group_commit_delay_us > 0) GatherGroup();
    std::vector<Writer> finished = CommitGroup();
    // Callbacks run without mu_: they may call back into the WAL. Appends queued
    // meanwhile form the next group.
    mu_.Unlock();
    for (Writer& w : finished) {
      if (w.status.ok()) {
        std::move(w.done)(w.result);
      } else {
        std::move(w.done)(w.status);
      }
    }
    finished.clear();
    mu_.Lock();
  }
  mu_.Unlock();
}

void RocksWal::GatherGroup() {
  using std::chrono::steady_clock;
  const steady_clock::time_point deadline =
      steady_clock::now() + std::chrono::microseconds(options_.group_commit_delay_us);
  gathering_ = true;
  while (!stopping_ && write_error_.ok() && !GroupFull()) {
    const steady_clock::time_point now = steady_clock::now();
    if (now >= deadline) break;
    work_cv_.WaitFor(&mu_, std::chrono::duration_cast<std::chrono::microseconds>(deadline - now) +
                               std::chrono::microseconds(1));
  }
  gathering_ = false;
}

std::vector<RocksWal::Writer> RocksWal::CommitGroup() {
  // The group stays in the queue while it is written, so that LockWithNoGroupCommit()
  // sees it: sequence numbers commit in order.
  std::vector<Writer*> group;
  size_t examined = 0, bytes = 0;
  std::map<std::string, uint64_t> group_topics;  // bytes per topic admitted so far
  for (Writer& qw : queue_) {
    Writer* w = &qw;
    if (group.size() >= options_.max_group_requests ||
        (!group.empty() && bytes + w->batch.bytes() > options_.max_group_bytes)) {
      break;
    }
    ++examined;
    if (write_error_.ok()) {
      w->status = Admit(w->batch, bytes, &group_topics);
      if (!w->status.ok()) continue;
    }
    group.push_back(w);
    bytes += w->batch.bytes();
  }
  absl::Status status = write_error_;
  const int64_t receive_ms = NextReceiveTime();
  const uint64_t first_seq = next_seq_;
  std::map<std::string, Counts> accepted;  // new totals of the group's topics
  for (Writer* w : group) {
    w->result.first_seq = next_seq_;
    w->result.receive_time_ms = receive_ms;
    next_seq_ += w->batch.size();
    for (const auto& [topic, delta] : w->batch.topics()) {
      auto it = accepted.find(topic);
      if (it == accepted.end()) {
        auto t = topics_.find(topic);
        it = accepted.emplace(topic, t == topics_.end() ? Counts{} : t->second.accepted).first;
      }
      it->second.count += delta.first;
      it->second.bytes += delta.second;
    }
  }
  const uint64_t end_seq = next_seq_;
  writing_receive_ms_ = receive_ms;
  if (status.ok()) TouchTopics(accepted, receive_ms);
  // Taken with writing_receive_ms_: a lease granted after this waits for the group.
  const CommitPoints leased = lease_.LeasedFor(accepted);

  if (status.ok() && !group.empty()) {
    mu_.Unlock();
    rocksdb::Status s;
    {
      ReaderLock r(&db_mu_);
      if (!db_) {
        s = rocksdb::Status::IOError("WAL is closed");
      } else {
        rocksdb::WriteBatch wb(bytes + 64 * (end_seq - first_seq) + 256);
        uint64_t seq = first_seq;
        for (Writer* w : group) {
          for (std::string& rec : w->batch.records()) {
            SealRecord(receive_ms, &rec);
            wb.Put(db_->log, keys::Seq(seq++), rec);
          }
        }
        wb.Put(db_->meta, keys::kNextSeq, keys::U64(end_seq));
        wb.Put(db_->meta, keys::kLastReceive, keys::U64(static_cast<uint64_t>(receive_ms)));
        for (const auto& [topic, c] : accepted) {
          wb.Put(db_->meta, keys::Accepted(topic), keys::EncodeAccepted(c, receive_ms));
        }
        CommitLease::PutLeased(leased, db_->meta, &wb);
        auto start = std::chrono::steady_clock::now();
        s = SyncedWrite(&wb);
        if (s.ok() && options_.on_group_commit) {
          options_.on_group_commit(
              end_seq - first_seq,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
      }
    }
    mu_.Lock();
    if (s.ok()) {
      ++group_commits_;
      lease_.NoteDurable(leased);
      appends_ += group.size();
      appended_messages_ += end_seq - first_seq;
      live_bytes_ += bytes;
      for (auto& [topic, c] : accepted) topics_[topic].accepted = c;
    } else {
      RecordWriteErrorLocked(s, "append");
      status = write_error_;
    }
  }
  writing_receive_ms_.reset();
  committed_next_ = end_seq;
  for (Writer* w : group) w->status = status;
  std::vector<Writer> finished;
  finished.reserve(examined);
  for (size_t i = 0; i < examined; ++i) {
    queued_bytes_ -= queue_.front().batch.bytes();
    finished.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return finished;
}

}  // namespace kspool::wal
