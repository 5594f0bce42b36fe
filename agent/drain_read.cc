// DrainLoop: reading the WAL into the window, shared fairly between topics.
//
// The log is one keyspace in sequence order (wal/FORMAT.md "Reading"). The reader's
// cursor passes every entry once; an entry whose topic has used up its share of the
// window (window / topics with work) is skipped and the topic remembers where its
// unread entries begin. A topic with unread entries is read from there (CatchUp), taking
// only its own entries, in order, up to the cursor. A stuck topic therefore holds at
// most its share, and the reader goes on to other topics behind it. Passing over an
// entry costs a peek at its first bytes, and each catch-up pass starts where the last
// one stopped, so every entry is passed over at most once per lagging topic.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/drain_loop.h"
#include "agent/kafka_errors.h"

namespace kspool::agent {

bool DrainLoop::Refill(int64_t now) {
  size_t competing = 0;
  bool slow = false;  // a topic in the window that has not delivered for a while
  for (const auto& [name, ts] : topics_) {
    if (ts.idle()) continue;
    ++competing;
    if (ts.in_window > 0 && now - std::max(ts.last_delivery_ms, ts.pending_since_ms) > 1000) {
      slow = true;
    }
  }
  competing = std::max<size_t>(competing, 1);
  const Shares shares{options_.max_inflight_messages / competing,
                      options_.max_inflight_bytes / competing};
  bool added = false;
  for (auto& [name, ts] : topics_) {
    if (ts.unread_from != 0 && !shares.Full(ts) && !WindowFull()) {
      added |= CatchUp(name, ts, shares);
    }
  }
  // While the window is full, look past it now and then, but only when a topic in it
  // is slow to deliver: that is when a newcomer may be waiting behind it.
  if (!WindowFull() || (slow && now >= next_full_scan_ms_)) {
    if (WindowFull()) next_full_scan_ms_ = now + 100;
    added |= ReadNew(shares);
  }
  Evict(shares);
  inflight_.store(window_.size());
  return added;
}

bool DrainLoop::CatchUp(const std::string& topic, TopicState& ts, const Shares& shares) {
  uint64_t room = options_.max_inflight_messages - window_.size();
  uint64_t room_bytes = options_.max_inflight_bytes - window_bytes_;
  std::optional<int64_t> stopped_at_ms;
  std::vector<wal::Entry> entries;
  uint64_t next = 0;
  absl::Status s = wal_->ScanChoosing(
      {ts.unread_from, cursor_, options_.scan_max_keys},
      [&](const wal::ScanCandidate& c) {
        if (c.topic != topic || window_.count(c.seq)) return wal::ScanChoice::kSkip;
        if (room == 0 || room_bytes == 0 || shares.Full(ts)) {
          stopped_at_ms = c.receive_time_ms;
          return wal::ScanChoice::kStop;
        }
        --room;
        room_bytes -= std::min<uint64_t>(room_bytes, c.size);
        ts.in_window += 1;
        ts.window_bytes += c.size;
        return wal::ScanChoice::kTake;
      },
      &entries, &next);
  if (!s.ok()) {
    spdlog::warn("drain: WAL scan failed, retrying: {}", s.ToString());
    Degraded("wal_scan_failed");
  } else if (next >= cursor_) {
    ts.unread_from = 0;  // caught up: its newer entries are read in the main pass again
  } else {
    ts.unread_from = next;
    if (stopped_at_ms) ts.unread_receive_ms = *stopped_at_ms;
  }
  return Admit(entries);
}

bool DrainLoop::ReadNew(const Shares& shares) {
  uint64_t room = options_.max_inflight_messages - std::min<uint64_t>(
                                                       window_.size(), options_.max_inflight_messages);
  uint64_t room_bytes = options_.max_inflight_bytes -
                        std::min<uint64_t>(window_bytes_, options_.max_inflight_bytes);
  std::vector<wal::Entry> entries;
  uint64_t next = cursor_;
  absl::Status s = wal_->ScanChoosing(
      {cursor_, UINT64_MAX, options_.scan_max_keys},
      [&](const wal::ScanCandidate& c) {
        if (window_.count(c.seq)) return wal::ScanChoice::kSkip;  // read before a reopen
        auto t = topics_.find(c.topic);  // no allocation for a known topic
        if (t == topics_.end()) t = topics_.emplace(std::string(c.topic), TopicState{}).first;
        TopicState& ts = t->second;
        // An unreadable record is taken whatever the room: it is quarantined at once.
        if (!c.topic.empty()) {
          if (ts.unread_from != 0) return wal::ScanChoice::kSkip;  // read in order by CatchUp
          if (room == 0 || room_bytes == 0 || shares.Full(ts)) {
            ts.unread_from = c.seq;
            ts.unread_receive_ms = c.receive_time_ms;
            return wal::ScanChoice::kSkip;
          }
        }
        room -= std::min<uint64_t>(room, 1);
        room_bytes -= std::min<uint64_t>(room_bytes, c.size);
        ts.in_window += 1;
        ts.window_bytes += c.size;
        return wal::ScanChoice::kTake;
      },
      &entries, &next);
  if (!s.ok()) {
    spdlog::warn("drain: WAL scan failed, retrying: {}", s.ToString());
    Degraded("wal_scan_failed");
  }
  cursor_ = std::max(cursor_, next);
  return Admit(entries);
}

bool DrainLoop::Admit(std::vector<wal::Entry>& entries) {
  std::string_view last_topic;
  std::shared_ptr<const TopicLayout> layout;
  const int64_t now = options_.clock->MonotonicMillis();
  for (wal::Entry& e : entries) {
    const uint64_t seq = e.seq;
    window_bytes_ += e.size;
    Slot& slot = window_[seq];
    slot.entry = std::move(e);
    if (!slot.entry.status.ok()) {
      // Counted under the topic its first bytes name, as the reader counted it.
      slot.entry.record.topic = std::string(wal::PeekTopic(slot.entry.raw));
      // Quarantined, never a crash loop: the record is kept as stored in the dead letters.
      Discard(seq, slot, kReasonCorrupt, slot.entry.status.ToString());
      continue;
    }
    const std::string& topic = slot.entry.record.topic;
    if (!layout || topic != last_topic) {
      layout = options_.partitions->Get(topic);
      last_topic = topic;
    }
    TopicState& ts = topics_[topic];
    if (ts.pending_since_ms == 0) ts.pending_since_ms = now;
    Enqueue(seq, slot, *layout);
  }
  inflight_.store(window_.size());
  return !entries.empty();
}

void DrainLoop::Evict(const Shares& shares) {
  if (!WindowFull()) return;
  bool someone_waits = false;
  for (const auto& [name, ts] : topics_) {
    if (ts.unread_from != 0 && !shares.Full(ts)) someone_waits = true;
  }
  if (!someone_waits) return;
  for (auto& [name, ts] : topics_) {
    if (ts.in_window <= shares.messages && ts.window_bytes <= shares.bytes) continue;
    // Only entries not handed to the producer can leave; the newest go first, so the
    // topic keeps its oldest entries and its order.
    std::vector<uint64_t> evictable;
    auto collect = [&](const Lane& lane) {
      evictable.insert(evictable.end(), lane.ready.begin(), lane.ready.end());
      evictable.insert(evictable.end(), lane.waiting.begin(), lane.waiting.end());
    };
    collect(ts.unrouted);
    collect(ts.unordered);
    for (const auto& [p, lane] : ts.partitions) collect(lane);
    std::sort(evictable.begin(), evictable.end(), std::greater<>());
    size_t evicted = 0;
    for (uint64_t seq : evictable) {
      if (ts.in_window <= shares.messages && ts.window_bytes <= shares.bytes) break;
      Forget(seq, window_.at(seq));
      ++evicted;
    }
    if (evicted > 0) {
      spdlog::debug("drain: topic '{}' is over its share of the window; {} unsent entries left "
                    "in the WAL for later", name, evicted);
    }
  }
  inflight_.store(window_.size());
}

void DrainLoop::Forget(uint64_t seq, Slot& slot) {
  Unqueue(seq, slot);
  TopicState& ts = topics_[slot.entry.record.topic];
  if (ts.unread_from == 0 || seq < ts.unread_from) {
    ts.unread_from = seq;
    ts.unread_receive_ms = slot.entry.record.receive_time_ms;
  }
  ts.in_window -= 1;
  ts.window_bytes -= slot.entry.size;
  window_bytes_ -= slot.entry.size;
  window_.erase(seq);
}

}  // namespace kspool::agent
