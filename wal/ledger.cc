// Ledger (ledger.h): admission, the counters' take-over, and topic tracking.
#include "wal/ledger.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace kspool::wal {

Counts Ledger::accepted(const std::string& topic) const {
  auto t = topics_.find(topic);
  return t == topics_.end() ? Counts{} : t->second.accepted;
}

void Ledger::Load(std::map<std::string, TopicStats> topics, uint64_t head) {
  topics_ = std::move(topics);
  head_ = head;
  live_bytes_ = 0;
  for (const auto& [t, ts] : topics_) live_bytes_ += ts.stored().bytes;
}

absl::Status Ledger::Admit(const AppendBatch& batch, uint64_t group_bytes, uint64_t dead_bytes,
                           std::map<std::string, uint64_t>* group_topics) {
  const uint64_t in_use = live_bytes_ + dead_bytes + group_bytes;
  if (limits_.max_bytes > 0 && in_use + batch.bytes() > limits_.max_bytes) {
    ++refused_[kWalFull];
    return absl::ResourceExhaustedError(
        "WAL full: " + std::to_string(in_use) + " of " + std::to_string(limits_.max_bytes) +
        " bytes in use (" + std::to_string(dead_bytes) +
        " of them dead letters), the request needs " + std::to_string(batch.bytes()) +
        "; retry once Kafka has drained some");
  }
  if (limits_.max_topic_bytes > 0) {
    for (const auto& [topic, delta] : batch.topics()) {
      uint64_t pending = 0;
      if (auto t = topics_.find(topic); t != topics_.end()) pending = t->second.stored().bytes;
      if (auto g = group_topics->find(topic); g != group_topics->end()) pending += g->second;
      if (pending + delta.second <= limits_.max_topic_bytes) continue;
      ++refused_[kTopicFull];
      // Counted per topic only for tracked ones: the label set stays bounded.
      if (tracked_.count(topic)) ++topic_full_refused_[topic];
      return absl::ResourceExhaustedError(
          "topic " + topic + " full: " + std::to_string(pending) + " of its " +
          std::to_string(limits_.max_topic_bytes) +
          " bytes (--topic-max-bytes) are in the WAL, the request needs " +
          std::to_string(delta.second) +
          " more; other topics are still accepted; retry once Kafka has drained some of it");
    }
  }
  for (const auto& [topic, delta] : batch.topics()) (*group_topics)[topic] += delta.second;
  return absl::OkStatus();
}

void Ledger::NoteAccepted(const std::map<std::string, Counts>& accepted, uint64_t bytes) {
  live_bytes_ += bytes;
  for (const auto& [topic, c] : accepted) topics_[topic].accepted = c;
}

void Ledger::NoteSettled(const std::map<std::string, TopicStats>& totals, uint64_t bytes,
                         uint64_t held_added, uint64_t held_released) {
  for (const auto& [topic, t] : totals) {
    TopicStats& ts = topics_[topic];
    ts.delivered = t.delivered;
    for (const auto& [reason, c] : t.discarded) ts.discarded[reason] = c;
    ts.held = t.held;
  }
  live_bytes_ += held_added;
  live_bytes_ -= std::min(live_bytes_, bytes + held_released);
}

void Ledger::NoteDeadDropped(const std::map<std::string, std::map<std::string, Counts>>& dropped) {
  for (const auto& [topic, by_limit] : dropped) {
    for (const auto& [limit, c] : by_limit) topics_[topic].dead_dropped[limit] = c;
  }
}

void Ledger::Touch(const std::map<std::string, Counts>& topics, int64_t receive_ms) {
  for (const auto& [topic, c] : topics) tracked_[topic] = receive_ms;
}

std::vector<std::string> Ledger::TrackedTopics() const {
  std::vector<std::string> out;
  out.reserve(tracked_.size());
  for (const auto& [topic, last] : tracked_) out.push_back(topic);
  return out;
}

void Ledger::TrackAtOpen(bool reopen, const std::map<std::string, int64_t>& last_append,
                         int64_t now_ms, CommitPoints* points) {
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
  auto track = [&](const std::string& topic) {
    auto last = last_append.find(topic);
    tracked.emplace(topic, last != last_append.end() ? last->second : now_ms);
  };
  for (const auto& [topic, ms] : points->topics_ms) track(topic);
  for (const auto& [topic, t] : topics_) {
    if (t.pending().count > 0) track(topic);
  }
  tracked_ = std::move(tracked);
}

CommitPoints Ledger::KeepTracked(const CommitPoints& points) const {
  CommitPoints kept;
  kept.global_ms = points.global_ms;
  for (const auto& [topic, ms] : points.topics_ms) {
    // A topic not tracked was forgotten meanwhile (or never appended to: a tracker
    // learns its topics from the WAL's entries, and an append tracks its topics before
    // it is written). Its counters may have left with it (PlanFold), so they cannot
    // tell which.
    if (!tracked_.count(topic)) continue;
    kept.topics_ms.emplace(topic, ms);
  }
  return kept;
}

std::vector<std::string> Ledger::IdleTopics(int64_t now_ms) const {
  std::vector<std::string> gone;
  const int64_t idle_ms = limits_.topic_idle_forget_ms;
  const size_t cap = limits_.max_tracked_topics;
  std::vector<std::pair<int64_t, std::string>> idle;  // (last append, topic), nothing live
  for (const auto& [topic, last] : tracked_) {
    auto t = topics_.find(topic);
    if (t != topics_.end() && t->second.pending().count > 0) continue;
    idle.emplace_back(last, topic);
  }
  // Longest idle first: those past the idle time, then more while over the cap.
  std::sort(idle.begin(), idle.end());
  for (const auto& [last, topic] : idle) {
    const bool expired = idle_ms > 0 && now_ms - last >= idle_ms;
    const bool over_cap = cap > 0 && tracked_.size() - gone.size() > cap;
    if (!expired && !over_cap) break;
    gone.push_back(topic);
  }
  return gone;
}

TopicStats Ledger::PlanFold(const std::vector<std::string>& topics,
                            std::vector<std::string>* folded) const {
  folded->clear();
  auto f = topics_.find(kForgottenTopics);
  TopicStats totals = f == topics_.end() ? TopicStats{} : f->second;
  for (const std::string& topic : topics) {
    auto t = topics_.find(topic);
    if (t == topics_.end() || t->second.stored().count > 0) continue;
    totals.Add(t->second);
    folded->push_back(topic);
  }
  return totals;
}

void Ledger::NoteFolded(const std::vector<std::string>& folded, TopicStats totals) {
  if (folded.empty()) return;
  for (const std::string& topic : folded) topics_.erase(topic);
  topics_[kForgottenTopics] = std::move(totals);
}

void Ledger::Forget(const std::vector<std::string>& topics) {
  for (const std::string& topic : topics) {
    tracked_.erase(topic);
    topic_full_refused_.erase(topic);
  }
  topics_forgotten_ += topics.size();
}

}  // namespace kspool::wal
