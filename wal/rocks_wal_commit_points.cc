// RocksWal: commit points, persisted before they are published.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/status.h"

namespace kspool::wal {

CommitPoints MaxOf(const CommitPoints& a, const CommitPoints& b) {
  CommitPoints m = a;
  m.global_ms = std::max(a.global_ms, b.global_ms);
  for (const auto& [topic, ms] : b.topics_ms) {
    auto [it, fresh] = m.topics_ms.try_emplace(topic, ms);
    if (!fresh) it->second = std::max(it->second, ms);
  }
  return m;
}

int64_t HighestPoint(const CommitPoints& p) {
  int64_t h = p.global_ms;
  for (const auto& [topic, ms] : p.topics_ms) h = std::max(h, ms);
  return h;
}

CommitPoints RocksWal::SavedCommitPoints() const {
  MutexLock l(&mu_);
  return saved_points_;
}

absl::Status RocksWal::SaveCommitPoints(const CommitPoints& points) {
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  rocksdb::WriteBatch wb;
  wb.Put(db_->meta, keys::kCommitPoint, keys::U64(static_cast<uint64_t>(points.global_ms)));
  for (const auto& [topic, ms] : points.topics_ms) {
    wb.Put(db_->meta, keys::TopicCommitPoint(topic), keys::U64(static_cast<uint64_t>(ms)));
  }
  {
    // Raise the floor before the points can be seen, so no later receive time is <= them.
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
    receive_floor_ms_ = std::max(receive_floor_ms_, HighestPoint(points) + 1);
  }
  OutcomeTable before;
  FoldSplit(points.global_ms, &wb, &before);
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "commit point write");
    return FromRocks(s, "save commit points");
  }
  MutexLock l(&mu_);
  saved_points_ = points;
  before_ = std::move(before);
  after_.erase(after_.begin(), after_.upper_bound(points.global_ms));
  return absl::OkStatus();
}

}  // namespace kspool::wal
