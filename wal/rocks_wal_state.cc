// RocksWal: statistics, commit points, and compaction of the dead range.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

namespace kspool::wal {

Stats RocksWal::GetStats() const {
  Stats s;
  uint64_t head, limit;
  ReaderLock r(&db_mu_);
  {
    MutexLock l(&mu_);
    s.next_seq = next_seq_;
    s.agent_id = agent_id_;
    s.topics = topics_;
    s.fsyncs = fsyncs_;
    s.appends = appends_;
    s.appended_messages = appended_messages_;
    s.capacity_bytes = options_.max_bytes;
    s.dead_letters = dead_;
    s.queued_bytes = queued_bytes_;
    s.refused = refused_;
    s.topic_full_refused = topic_full_refused_;
    s.tracked_topics = tracked_.size();
    s.topics_forgotten = topics_forgotten_;
    s.report_buckets = after_.size();
    s.report_coarsenings = report_coarsenings_;
    head = head_;
    limit = committed_next_;
  }
  for (const auto& [t, ts] : s.topics) {
    Counts p = ts.pending();
    s.entries += p.count;
    s.bytes += p.bytes;
  }
  if (s.entries > 0 && db_) s.oldest_seq = FirstLiveAtOrAfter(head, limit);
  return s;
}

CommitPoints RocksWal::SavedCommitPoints() const {
  MutexLock l(&mu_);
  return saved_points_;
}

absl::Status RocksWal::SaveCommitPoints(const CommitPoints& requested) {
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  const CommitPoints points = KeepTracked(requested);
  rocksdb::WriteBatch wb;
  wb.Put(db_->meta, keys::kCommitPoint, keys::U64(static_cast<uint64_t>(points.global_ms)));
  int64_t max_point = points.global_ms;
  for (const auto& [topic, ms] : points.topics_ms) {
    wb.Put(db_->meta, keys::TopicCommitPoint(topic), keys::U64(static_cast<uint64_t>(ms)));
    max_point = std::max(max_point, ms);
  }
  {
    // Raise the floor before the points can be seen, so no later receive time is <= them.
    MutexLock l(&mu_);
    receive_floor_ms_ = std::max(receive_floor_ms_, max_point + 1);
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  Fold fold;
  FoldSplit(points.global_ms, &wb, &fold);
  rocksdb::Status s = db_->db->Write(wo, &wb);
  if (!s.ok()) {
    RecordWriteError(s, "commit point write");
    return FromRocks(s, "save commit points");
  }
  MutexLock l(&mu_);
  saved_points_ = points;
  ApplyFold(std::move(fold));
  return absl::OkStatus();
}

absl::Status RocksWal::CompactDeadRange() {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t head;
  {
    MutexLock l(&mu_);
    head = head_;
  }
  std::string end = keys::Seq(head);
  rocksdb::Slice end_slice(end);
  return FromRocks(db_->db->CompactRange(rocksdb::CompactRangeOptions(), db_->log, nullptr, &end_slice),
                   "compact WAL dead range");
}

}  // namespace kspool::wal
