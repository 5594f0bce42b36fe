// RocksWal: durable appends with group commit.
//
// Writers queue under mu_. The writer at the head of the queue is the leader: it takes
// the queue's first requests (bounded by bytes and count), assigns their sequence
// numbers and one receive time, drops mu_, writes them with the meta updates in one
// synced WriteBatch, then wakes every writer of the group. Writers that arrive during
// the fsync queue up and form the next, larger group: batches grow with load.
#include <chrono>

#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

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
    write_error_ = absl::UnavailableError(
        "WAL " + std::string(what) + " failed; no further appends are acknowledged until the "
        "WAL is reopened: " + s.ToString());
  }
}

absl::StatusOr<AppendResult> RocksWal::Append(AppendBatch batch) {
  if (batch.empty()) return absl::InvalidArgumentError("append of an empty batch");
  Writer w;
  w.batch = std::move(batch);
  MutexLock l(&mu_);
  if (!write_error_.ok()) return write_error_;
  queue_.push_back(&w);
  while (!w.done && queue_.front() != &w) w.cv.Wait(&mu_);
  if (!w.done) CommitGroup(&w);
  if (!w.status.ok()) return w.status;
  return w.result;
}

void RocksWal::CommitGroup(Writer* leader) {
  // The group stays in the queue while it is written, so that no second leader starts
  // a write before this one has finished: sequence numbers commit in order.
  std::vector<Writer*> group;
  size_t examined = 0, bytes = 0;
  for (Writer* w : queue_) {
    if (group.size() >= options_.max_group_requests ||
        (!group.empty() && bytes + w->batch.bytes() > options_.max_group_bytes)) {
      break;
    }
    ++examined;
    if (write_error_.ok() && options_.max_bytes > 0 &&
        live_bytes_ + bytes + w->batch.bytes() > options_.max_bytes) {
      w->status = absl::ResourceExhaustedError(
          "WAL full: " + std::to_string(live_bytes_ + bytes) + " of " +
          std::to_string(options_.max_bytes) + " bytes in use, the request needs " +
          std::to_string(w->batch.bytes()) + "; retry once Kafka has drained some");
      w->done = true;  // it returns without touching the queue again
      if (w != leader) w->cv.Signal();
      continue;
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
          wb.Put(db_->meta, keys::Accepted(topic), keys::EncodeCounts(c));
        }
        rocksdb::WriteOptions wo;
        wo.sync = true;
        auto start = std::chrono::steady_clock::now();
        s = db_->db->Write(wo, &wb);
        if (s.ok() && options_.on_group_commit) {
          options_.on_group_commit(
              end_seq - first_seq,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
      }
    }
    mu_.Lock();
    if (s.ok()) {
      ++fsyncs_;
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
  for (size_t i = 0; i < examined; ++i) queue_.pop_front();
  for (Writer* w : group) {
    w->status = status;
    w->done = true;
    if (w != leader) w->cv.Signal();
  }
  if (!queue_.empty()) queue_.front()->cv.Signal();
}

}  // namespace kspool::wal
