// RocksWal: durable appends with group commit.
//
// Writers queue under mu_. The writer at the head of the queue is the leader: it takes
// the queue's first requests (bounded by bytes and count), assigns their sequence
// numbers and one receive time, drops mu_, writes them with the meta updates in one
// synced WriteBatch, then wakes every writer of the group. Writers that arrive during
// the fsync queue up and form the next, larger group: batches grow with load.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

namespace kspool::wal {

int64_t RocksWal::NextReceiveTime() {
  int64_t t = std::max({options_.clock->NowMillis(), last_receive_ms_, receive_floor_ms_});
  last_receive_ms_ = t;
  return t;
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
  std::vector<Writer*> group;
  size_t bytes = 0;
  for (Writer* w : queue_) {
    if (!group.empty() && (group.size() >= options_.max_group_requests ||
                           bytes + w->batch.bytes() > options_.max_group_bytes)) {
      break;
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
        it = accepted.emplace(topic, topics_.count(topic) ? topics_[topic].accepted : Counts{})
                 .first;
      }
      it->second.count += delta.first;
      it->second.bytes += delta.second;
    }
  }
  const uint64_t end_seq = next_seq_;
  writing_receive_ms_ = receive_ms;

  if (status.ok()) {
    mu_.Unlock();
    rocksdb::WriteBatch wb(bytes + 64 * (end_seq - first_seq) + 256);
    uint64_t seq = first_seq;
    for (Writer* w : group) {
      for (std::string& rec : w->batch.records()) {
        SealRecord(receive_ms, &rec);
        wb.Put(log_, keys::Seq(seq++), rec);
      }
    }
    wb.Put(meta_, keys::kNextSeq, keys::U64(end_seq));
    wb.Put(meta_, keys::kLastReceive, keys::U64(static_cast<uint64_t>(receive_ms)));
    for (const auto& [topic, c] : accepted) wb.Put(meta_, keys::Accepted(topic), keys::EncodeCounts(c));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s = db_->Write(wo, &wb);
    mu_.Lock();
    if (s.ok()) {
      ++fsyncs_;
      appends_ += group.size();
      for (auto& [topic, c] : accepted) topics_[topic].accepted = c;
    } else {
      // LevelDB's lesson: after a failed write or sync the log's state is unknown, so
      // nothing more is acknowledged until the WAL is reopened and recovered.
      write_error_ = absl::UnavailableError(
          "WAL write failed; no further appends are acknowledged until the WAL is reopened: " +
          s.ToString());
      status = write_error_;
    }
  }
  writing_receive_ms_.reset();
  committed_next_ = end_seq;
  for (Writer* w : group) {
    queue_.pop_front();
    w->status = status;
    w->done = true;
    if (w != leader) w->cv.Signal();
  }
  if (!queue_.empty()) queue_.front()->cv.Signal();
}

}  // namespace kspool::wal
