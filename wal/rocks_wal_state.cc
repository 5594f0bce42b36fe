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
    s.next_seq = tail_.next_seq();
    s.agent_id = agent_id_;
    s.topics = ledger_.topics();
    s.fsyncs = fsyncs_.load(std::memory_order_relaxed);
    s.group_commits = tail_.group_commits();
    s.appends = tail_.appends();
    s.appended_messages = tail_.appended_messages();
    s.capacity_bytes = options_.max_bytes;
    s.dead_letters = dead_letters_.totals();
    s.queued_bytes = committer_.queued_bytes(&mu_);
    s.refused = ledger_.refused();
    s.reserve_missing = reserve_ && reserve_->missing();
    s.reserve_bytes = reserve_ && !s.reserve_missing ? reserve_->bytes() : 0;
    s.topic_full_refused = ledger_.topic_full_refused();
    s.tracked_topics = ledger_.tracked_count();
    s.topics_forgotten = ledger_.topics_forgotten();
    s.tallies_restarted = tallies_restarted_.load();
    s.report_buckets = report_.buckets();
    s.report_coarsenings = report_.coarsenings();
    s.delivery_index = delivery_index_.totals();
    s.delivery_floor_seq = delivery_index_.floor();
    head = ledger_.head();
    limit = tail_.committed_next();
  }
  for (const auto& [t, ts] : s.topics) {
    Counts p = ts.pending();
    s.entries += p.count;
    s.bytes += p.bytes;
    s.held_bytes += ts.held.bytes;
  }
  if (s.entries > 0 && db_) {
    // If the log cannot be read, the head: every live entry is at or above it.
    absl::StatusOr<std::optional<uint64_t>> oldest = FirstLiveAtOrAfter(head, limit);
    s.oldest_seq = oldest.ok() ? *oldest : std::optional<uint64_t>(head);
  }
  return s;
}

RocksWal::LiveRange RocksWal::live_range() const {
  MutexLock l(&mu_);
  return {ledger_.head(), tail_.committed_next()};
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
    head = ledger_.head();
  }
  std::string end = keys::Seq(head);
  rocksdb::Slice end_slice(end);
  const rocksdb::Status s =
      db_->db->CompactRange(rocksdb::CompactRangeOptions(), db_->log, nullptr, &end_slice);
  // After a compaction failed for space, RocksDB refuses every compaction (this one:
  // CompactionTooLarge) until the volume has the failed one's input and its write
  // buffer free: on a volume the WAL filled, never, and nothing settled would be freed.
  // A reopen (the drain's, as after a failed write) starts without that state.
  if (s.IsNoSpace() || s.IsCompactionTooLarge()) {
    RecordWriteError(s, "compaction of the dead range");
  }
  return FromRocks(s, "compact WAL dead range");
}

Report RocksWal::GetReport() const {
  MutexLock l(&mu_);
  return report_.Get(ledger_.topics());
}

}  // namespace kspool::wal
