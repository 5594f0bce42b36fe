// RocksWal: topic tracking (Ledger keeps and decides, ledger.h). A topic with nothing
// live and no append for Options::topic_idle_forget_ms loses its commit point, and so do
// the longest idle beyond Options::max_tracked_topics; their counters are added to
// kForgottenTopics' and leave, and so do their rows of the discard report; their
// watermarks stay (they leave memory only: watermark_store.h).
#include <algorithm>

#include "base/check.h"
#include "wal/keys.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

void RocksWal::PutFold(const std::vector<std::string>& folded, const TopicStats& forgotten,
                       rocksdb::WriteBatch* wb) {
  for (const std::string& topic : folded) {
    const TopicStats& t = ledger_.topics().at(topic);  // PlanFold took only those it has
    wb->Delete(db_->meta, keys::Accepted(topic));
    wb->Delete(db_->meta, keys::Delivered(topic));
    wb->Delete(db_->meta, keys::Held(topic));
    for (const auto& [reason, c] : t.discarded)
      wb->Delete(db_->meta, keys::Discarded(topic, reason));
    for (const auto& [limit, c] : t.dead_dropped)
      wb->Delete(db_->meta, keys::DeadDropped(topic, limit));
  }
  const std::string f = kForgottenTopics;
  // Without a last append time: the sum is no topic's, and is never tracked.
  wb->Put(db_->meta, keys::Accepted(f), keys::EncodeCounts(forgotten.accepted));
  wb->Put(db_->meta, keys::Delivered(f), keys::EncodeCounts(forgotten.delivered));
  wb->Put(db_->meta, keys::Held(f), keys::EncodeCounts(forgotten.held));
  for (const auto& [reason, c] : forgotten.discarded) {
    wb->Put(db_->meta, keys::Discarded(f, reason), keys::EncodeCounts(c));
  }
  for (const auto& [limit, c] : forgotten.dead_dropped) {
    wb->Put(db_->meta, keys::DeadDropped(f, limit), keys::EncodeCounts(c));
  }
}

std::vector<std::string> RocksWal::TrackedTopics() const {
  MutexLock l(&mu_);
  return ledger_.TrackedTopics();
}

CommitPoints RocksWal::KeepTracked(const CommitPoints& points) {
  MutexLock l(&mu_);
  return ledger_.KeepTracked(points);
}

absl::StatusOr<std::vector<std::string>> RocksWal::ForgetIdleTopics() {
  if (options_.topic_idle_forget_ms <= 0 && options_.max_tracked_topics == 0) {
    return std::vector<std::string>{};
  }
  MutexLock settle(&settle_mu_);  // serializes with SaveCommitPoints
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  // mu_ is held across the (unsynced, short) write, so no append can touch a topic
  // between the check and the forgetting.
  MutexLock l(&mu_);
  if (!write_error_.ok()) return write_error_;
  // Receive times never go backwards: a wall-clock step back delays forgetting, a step
  // forward hastens it; neither loses anything, a forgotten topic is tracked again at
  // its next append.
  std::vector<std::string> gone = ledger_.IdleTopics(tail_.Now(options_.clock->NowMillis()));
  // Being appended to: not idle (see writing_topics_). (Read here: -Wthread-safety
  // cannot see mu_ held inside a lambda.)
  if (const std::map<std::string, Counts>* writing = writing_topics_) {
    gone.erase(std::remove_if(gone.begin(), gone.end(),
                              [writing](const std::string& t) { return writing->count(t) > 0; }),
               gone.end());
  }
  if (gone.empty()) return gone;
  rocksdb::WriteBatch wb;
  for (const std::string& topic : gone) {
    wb.Delete(db_->meta, keys::TopicCommitPoint(topic));
    wb.Delete(db_->meta, keys::TopicLeasedPoint(topic));
    wb.Delete(db_->meta, keys::Routing(topic));  // nothing live is left to route
  }
  // Its delivery tallies leave (tally_store.h); if they cannot be listed they stay.
  (void)TallyStore::PlanForget(gone, *db_, &wb);
  // The watermarks stay: a topic that returns and then crashes with copies in Kafka is
  // reconciled from them, and without them by time, which misses messages whose client
  // set an older timestamp.
  // Without their points, the floor (above every saved point, these included) keeps a
  // returning topic's receive times above them, also after a restart.
  wb.Put(db_->meta, keys::kReceiveFloor,
         keys::U64(static_cast<uint64_t>(tail_.receive_floor_ms())));
  // Their counters leave too, added to kForgottenTopics' (Ledger::PlanFold), and so do
  // their rows of the discard report (ReportSplit::PlanForget).
  std::vector<std::string> folded;
  TopicStats forgotten = ledger_.PlanFold(gone, &folded);
  ReportSplit::Forget report_change;
  if (!folded.empty()) {
    PutFold(folded, forgotten, &wb);
    report_.PlanForget(folded, db_->meta, &wb, &report_change);
  }
  // Not synced: if the write is lost, the topics are tracked again after a restart, and
  // their counters are where they were.
  rocksdb::Status s = db_->db->Write(rocksdb::WriteOptions(), &wb);
  if (!s.ok()) {
    RecordWriteErrorLocked(s, "forgetting idle topics");
    return FromRocks(s, "forget idle topics");
  }
  ledger_.Forget(gone);
  ledger_.NoteFolded(folded, std::move(forgotten));
  report_.Apply(std::move(report_change));
  watermarks_.Forget(gone);
  tallies_.Forget(gone);  // if they stayed on disk, a returning topic reads them again
  for (const std::string& topic : gone) lease_.Forget(topic);
  return gone;
}

}  // namespace kspool::wal
