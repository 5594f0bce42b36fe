// RocksWal: the bounds on what clients and time can make the WAL hold.
//
//  * The append queue, in bytes: an AppendAsync() beyond Options::max_queue_bytes is
//    refused before it is queued, so a flood of clients cannot grow memory.
//  * The capacity (Options::max_bytes) covers the live entries and the dead letters.
//  * Per topic (Options::max_topic_bytes): a topic that cannot drain fills at most that
//    much; only its own appends are refused, other topics' still go in.
//  * Tracked topics: a topic with nothing live and no append for
//    Options::topic_idle_forget_ms loses its commit point, and so do the longest idle
//    beyond Options::max_tracked_topics; their counters (the ledger) stay.
#include <algorithm>

#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

constexpr char kWalFull[] = "wal_full";
constexpr char kTopicFull[] = "topic_full";
constexpr char kQueueFull[] = "append_queue_full";

}  // namespace

absl::Status RocksWal::AdmitToQueue(const AppendBatch& batch) {
  // A request larger than the bound alone still goes into an empty queue; otherwise it
  // could never be accepted (its bytes are already in memory, held by the caller).
  if (options_.max_queue_bytes == 0 || queue_.empty() ||
      queued_bytes_ + batch.bytes() <= options_.max_queue_bytes) {
    return absl::OkStatus();
  }
  ++refused_[kQueueFull];
  return absl::ResourceExhaustedError(
      "append queue full: " + std::to_string(queued_bytes_) + " bytes wait for the disk (limit " +
      std::to_string(options_.max_queue_bytes) + ", --max-append-queue-bytes), the request has " +
      std::to_string(batch.bytes()) + "; retry shortly");
}

absl::Status RocksWal::Admit(const AppendBatch& batch, uint64_t group_bytes,
                             std::map<std::string, uint64_t>* group_topics) {
  const uint64_t dead_bytes = dead_letters_.totals().bytes;
  const uint64_t in_use = live_bytes_ + dead_bytes + group_bytes;
  if (options_.max_bytes > 0 && in_use + batch.bytes() > options_.max_bytes) {
    ++refused_[kWalFull];
    return absl::ResourceExhaustedError(
        "WAL full: " + std::to_string(in_use) + " of " + std::to_string(options_.max_bytes) +
        " bytes in use (" + std::to_string(dead_bytes) +
        " of them dead letters), the request needs " + std::to_string(batch.bytes()) +
        "; retry once Kafka has drained some");
  }
  if (options_.max_topic_bytes > 0) {
    for (const auto& [topic, delta] : batch.topics()) {
      uint64_t pending = 0;
      if (auto t = topics_.find(topic); t != topics_.end()) pending = t->second.pending().bytes;
      if (auto g = group_topics->find(topic); g != group_topics->end()) pending += g->second;
      if (pending + delta.second <= options_.max_topic_bytes) continue;
      ++refused_[kTopicFull];
      // Counted per topic only for tracked ones: the label set stays bounded.
      if (tracked_.count(topic)) ++topic_full_refused_[topic];
      return absl::ResourceExhaustedError(
          "topic " + topic + " full: " + std::to_string(pending) + " of its " +
          std::to_string(options_.max_topic_bytes) +
          " bytes (--topic-max-bytes) are in the WAL, the request needs " +
          std::to_string(delta.second) +
          " more; other topics are still accepted; retry once Kafka has drained some of it");
    }
  }
  for (const auto& [topic, delta] : batch.topics()) (*group_topics)[topic] += delta.second;
  return absl::OkStatus();
}

void RocksWal::TouchTopics(const std::map<std::string, Counts>& topics, int64_t receive_ms) {
  for (const auto& [topic, c] : topics) tracked_[topic] = receive_ms;
}

std::vector<std::string> RocksWal::TrackedTopics() const {
  MutexLock l(&mu_);
  std::vector<std::string> out;
  out.reserve(tracked_.size());
  for (const auto& [topic, last] : tracked_) out.push_back(topic);
  return out;
}

void RocksWal::TrackAtOpen(bool reopen, const std::map<std::string, int64_t>& last_append,
                           CommitPoints* points) {
  std::map<std::string, int64_t> tracked;
  if (reopen) {
    // Memory knows which topics it forgot; a forgetting whose (unsynced) write was lost
    // must not bring them back.
    tracked = tracked_;
    for (auto it = points->topics_ms.begin(); it != points->topics_ms.end();) {
      it = tracked.count(it->first) ? std::next(it) : points->topics_ms.erase(it);
    }
  }
  // Idle time counts from a topic's last append, or from now when that is not recorded.
  const int64_t now = std::max(options_.clock->NowMillis(), last_receive_ms_);
  auto track = [&](const std::string& topic) {
    auto last = last_append.find(topic);
    tracked.emplace(topic, last != last_append.end() ? last->second : now);
  };
  for (const auto& [topic, ms] : points->topics_ms) track(topic);
  for (const auto& [topic, t] : topics_) {
    if (t.pending().count > 0) track(topic);
  }
  tracked_ = std::move(tracked);
}

CommitPoints RocksWal::KeepTracked(const CommitPoints& points) {
  CommitPoints kept;
  kept.global_ms = points.global_ms;
  MutexLock l(&mu_);
  for (const auto& [topic, ms] : points.topics_ms) {
    if (!tracked_.count(topic)) {
      // A topic with counters but not tracked was forgotten meanwhile; one the WAL has
      // never had is tracked from now on.
      if (topics_.count(topic)) continue;
      tracked_[topic] = std::max(options_.clock->NowMillis(), last_receive_ms_);
    }
    kept.topics_ms.emplace(topic, ms);
  }
  return kept;
}

absl::StatusOr<std::vector<std::string>> RocksWal::ForgetIdleTopics() {
  std::vector<std::string> gone;
  const int64_t idle_ms = options_.topic_idle_forget_ms;
  const size_t cap = options_.max_tracked_topics;
  if (idle_ms <= 0 && cap == 0) return gone;
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
  const int64_t now = std::max(options_.clock->NowMillis(), last_receive_ms_);
  std::vector<std::pair<int64_t, std::string>> idle;  // (last append, topic), nothing live
  for (const auto& [topic, last] : tracked_) {
    auto t = topics_.find(topic);
    if (t != topics_.end() && t->second.pending().count > 0) continue;
    idle.emplace_back(last, topic);
  }
  // Longest idle first: those past the idle time, then more while over the cap.
  std::sort(idle.begin(), idle.end());
  for (const auto& [last, topic] : idle) {
    const bool expired = idle_ms > 0 && now - last >= idle_ms;
    const bool over_cap = cap > 0 && tracked_.size() - gone.size() > cap;
    if (!expired && !over_cap) break;
    gone.push_back(topic);
  }
  if (gone.empty()) return gone;
  rocksdb::WriteBatch wb;
  for (const std::string& topic : gone) {
    wb.Delete(db_->meta, keys::TopicCommitPoint(topic));
    wb.Delete(db_->meta, keys::TopicLeasedPoint(topic));
  }
  // Without their points, the floor (above every saved point, these included) keeps a
  // returning topic's receive times above them, also after a restart.
  wb.Put(db_->meta, keys::kReceiveFloor, keys::U64(static_cast<uint64_t>(receive_floor_ms_)));
  // Not synced: if the write is lost, the topics are tracked again after a restart.
  rocksdb::Status s = db_->db->Write(rocksdb::WriteOptions(), &wb);
  if (!s.ok()) {
    RecordWriteErrorLocked(s, "forgetting idle topics");
    return FromRocks(s, "forget idle topics");
  }
  for (const std::string& topic : gone) {
    tracked_.erase(topic);
    lease_.Forget(topic);
    topic_full_refused_.erase(topic);
  }
  topics_forgotten_ += gone.size();
  return gone;
}

}  // namespace kspool::wal
