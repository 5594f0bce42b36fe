// RocksWal: statistics and the discard report (GetStats, GetReport), synced writes, and
// compaction of the dead range.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

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
    s.fsyncs = fsyncs_.load(std::memory_order_relaxed);
    s.group_commits = group_commits_;
    s.appends = appends_;
    s.appended_messages = appended_messages_;
    s.capacity_bytes = options_.max_bytes;
    s.dead_letters = dead_letters_.totals();
    s.queued_bytes = queued_bytes_;
    s.refused = refused_;
    s.topic_full_refused = topic_full_refused_;
    s.tracked_topics = tracked_.size();
    s.topics_forgotten = topics_forgotten_;
    s.report_buckets = report_.buckets();
    s.report_coarsenings = report_.coarsenings();
    s.delivery_index = delivery_index_.totals();
    s.delivery_floor_seq = delivery_index_.floor();
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

RocksWal::LiveRange RocksWal::live_range() const {
  MutexLock l(&mu_);
  return {head_, committed_next_};
}

rocksdb::Status RocksWal::SyncedWrite(rocksdb::WriteBatch* wb) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  fsyncs_.fetch_add(1, std::memory_order_relaxed);
  return db_->db->Write(wo, wb);
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

Report RocksWal::GetReport() const {
  MutexLock l(&mu_);
  return report_.Get(topics_);
}

}  // namespace kspool::wal
