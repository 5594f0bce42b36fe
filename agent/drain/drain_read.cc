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

#include "agent/drain/drain_loop.h"
#include "agent/drain/discard_reasons.h"

namespace kspool::agent {
bool DrainLoop::Refill(int64_t now) {
  size_t competing = 0;
  bool slow = false;  // a topic in the window that has not delivered for a while
  for (const auto& [name, ts] : topics_) {
    if (ts.idle()) continue;
    ++competing;
    if (ts.window.messages() > 0 &&
        now - std::max(ts.pace.last_delivery_ms, ts.pace.pending_since_ms) > 1000) {
      slow = true;
    }
  }
  competing = std::max<size_t>(competing, 1);
  // A share is at least one message: with more topics than the window holds messages,
  // each topic still gets its turn (the window's own bound is kept by WindowRoom()).
  const uint64_t messages = std::max<uint64_t>(1, options_.max_inflight_messages / competing);
  // A partition without a leader holds a quarter of that, at least one entry, but none
  // when the share is one entry: holding its topic's only entry, it would starve the
  // topic's partitions that have a leader until its own leader is back. Its entries
  // then wait unread (HoldsBack, Evict) and are read once it has a leader again.
  const Shares shares{messages, std::max<uint64_t>(1, options_.max_inflight_bytes / competing),
                      messages > 1 ? std::max<uint64_t>(1, messages / 4) : 0};
  bool added = false;
  // Topics with unread entries take turns for the room: each pass starts after the
  // topic served last, so that the first ones by name cannot take every turn.
  auto it = topics_.upper_bound(catch_up_after_);
  for (size_t i = 0, n = topics_.size(); i < n && !WindowFull(); ++i, ++it) {
    if (it == topics_.end()) it = topics_.begin();
    TopicState& ts = it->second;
    if (ts.unread.from == 0 || shares.Full(ts)) continue;
    if (CatchUp(it->first, ts, shares)) {
      added = true;
      catch_up_after_ = it->first;
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
  Room room = WindowRoom();
  std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(topic);
  // After the topic's partition count changed, its skipped lanes are numbered by the old
  // count: under the new one, a key's newer entry would be taken while its older ones,
  // left unread for a leaderless partition, wait. Nothing is read until Reroute (called
  // here too: ProduceDue passes over a topic with nothing in the window) has routed the
  // topic by the new count and had its unread entries looked at again.
  if (RerouteDue(ts, *layout) && !Reroute(topic, ts, *layout)) {
    return false;  // entries routed by the old count are with the producer
  }
  std::map<int32_t, uint64_t> taken;
  std::optional<int64_t> stopped_at_ms;
  std::vector<wal::Entry> entries;
  uint64_t next = 0;
  absl::Status s = wal_->ScanChoosing(
      {std::max(ts.unread.from, ts.unread.scan_from), reader_.cursor(), options_.scan_max_keys},
      [&](const wal::ScanCandidate& c) {
        if (c.topic != topic || window_.count(c.seq)) return wal::ScanChoice::kSkip;
        AskReconcile(topic, ts, c.seq, c.receive_time_ms);
        if (room.Empty() || shares.Full(ts)) {
          stopped_at_ms = c.receive_time_ms;
          return wal::ScanChoice::kStop;
        }
        if (HoldsBack(ts, c, *layout, shares, &taken)) return wal::ScanChoice::kSkip;
        return room.Take(ts, c.size);
      },
      &entries, &next);
  if (!s.ok()) {
    ScanFailed(s);
  } else if (next >= reader_.cursor() && ts.unread.skipped_lanes.empty()) {
    ts.unread.Clear();  // caught up: its newer entries are read in the main pass again
  } else {
    ts.unread.scan_from = next;
    if (ts.unread.skipped_lanes.empty()) {
      // Everything before `next` is read; otherwise unread.from stays at or below the
      // first entry left for a leaderless partition.
      ts.unread.from = next;
      if (stopped_at_ms) ts.unread.receive_ms = *stopped_at_ms;
    }
  }
  return Admit(entries);
}

bool DrainLoop::HoldsBack(TopicState& ts, const wal::ScanCandidate& c, const TopicLayout& layout,
                          const Shares& shares, std::map<int32_t, uint64_t>* taken) {
  const int32_t lane = LaneFor(c.partition, c.key, layout);
  if (lane < 0) return false;
  if (ts.unread.skipped_lanes.count(lane)) return true;  // its older entries are unread: keep order
  if (!Held(ts, lane, layout)) return false;
  uint64_t& n = (*taken)[lane];
  if (ts.lanes.Load(lane) + n < shares.parked_lane) {
    ++n;
    return false;
  }
  ts.unread.skipped_lanes.insert(lane);
  return true;
}

bool DrainLoop::ReadNew(const Shares& shares) {
  Room room = WindowRoom();
  std::vector<wal::Entry> entries;
  uint64_t next = reader_.cursor();
  std::map<std::string_view, std::map<int32_t, uint64_t>> taken;  // per topic and lane
  std::string_view layout_topic;
  std::shared_ptr<const TopicLayout> layout;
  auto t = topics_.end();                              // the current run's topic
  std::map<int32_t, uint64_t>* topic_taken = nullptr;  // taken[its name], once asked for
  absl::Status s = wal_->ScanChoosing(
      {reader_.cursor(), UINT64_MAX, options_.scan_max_keys},
      [&](const wal::ScanCandidate& c) {
        if (reader_.MayBeTaken(c.seq) && window_.count(c.seq)) {
          return wal::ScanChoice::kSkip;  // read before the WAL was reopened
        }
        // Candidates come in runs of one topic (a batch record holds one): looked up once
        // per run. topics_ is a std::map, nothing here erases from it.
        if (t == topics_.end() || t->first != c.topic) {
          t = topics_.find(c.topic);  // no allocation for a known topic
          if (t == topics_.end()) t = topics_.try_emplace(std::string(c.topic)).first;
          topic_taken = nullptr;
        }
        TopicState& ts = t->second;
        // An unreadable record is taken whatever the room: it is quarantined at once.
        if (!c.topic.empty()) {
          AskReconcile(t->first, ts, c.seq, c.receive_time_ms);
          if (ts.unread.from != 0) {
            // Read in order by CatchUp, from unread.from on. Below it: after a WAL reopen
            // the cursor is back at the head while the window kept its entries, and one
            // forgotten since marked the topic unread above this one. Left unread, it must
            // lower unread.from, or no pass would read it and the commit point would pass it.
            if (c.seq < ts.unread.from) ts.unread.Mark(c.seq, c.receive_time_ms);
            return wal::ScanChoice::kSkip;
          }
          if (!layout || layout_topic != c.topic) {
            layout = options_.partitions->Get(t->first);
            layout_topic = t->first;
          }
          if (!topic_taken) topic_taken = &taken[t->first];
          if (room.Empty() || shares.Full(ts) || HoldsBack(ts, c, *layout, shares, topic_taken)) {
            ts.unread.Mark(c.seq, c.receive_time_ms);
            return wal::ScanChoice::kSkip;
          }
        }
        return room.Take(ts, c.size);
      },
      &entries, &next);
  if (!s.ok()) {
    ScanFailed(s);
    // The entries taken before the error may lie at or above `next`: the next pass must
    // pass over them (they are in the window), not take them again.
    if (!entries.empty()) reader_.TakenUpTo(entries.back().seq);
  }
  reader_.Passed(next);
  return Admit(entries);
}

Room DrainLoop::WindowRoom() const {
  return {options_.max_inflight_messages -
              std::min<uint64_t>(window_.size(), options_.max_inflight_messages),
          options_.max_inflight_bytes -
              std::min<uint64_t>(window_.bytes(), options_.max_inflight_bytes)};
}

void DrainLoop::ScanFailed(const absl::Status& s) {
  spdlog::warn("drain: WAL scan failed, retrying: {}", s.ToString());
  Degraded("wal_scan_failed");
}

bool DrainLoop::Admit(std::vector<wal::Entry>& entries) {
  // Entries come in runs of one topic (a batch record holds one): the topic's state and
  // layout are looked up once per run. topics_ is a std::map whose keys stay put, and
  // nothing here erases from it, so `ts` and `ts_name` stay valid.
  std::string_view ts_name;
  TopicState* ts = nullptr;
  std::string_view layout_topic;
  std::shared_ptr<const TopicLayout> layout;
  const int64_t now = options_.clock->MonotonicMillis();
  for (wal::Entry& e : entries) {
    const uint64_t seq = e.seq;
    // The chooser charged the entry to the topic it names (its first bytes, if it did
    // not decode). Offered again (the reader's cursor did not pass it, see
    // DrainLog::ScanChoosing on errors), the slot in the window is the one being sent:
    // the producer may still point into its buffers, and only that charge goes back.
    const std::string_view name =
        e.status.ok() ? std::string_view(e.record.topic) : wal::PeekTopic(e.raw);
    if (!ts || name != ts_name) {
      auto t = topics_.find(name);
      if (t == topics_.end()) t = topics_.try_emplace(std::string(name)).first;
      ts = &t->second;
      ts_name = t->first;
    }
    // Entries come in sequence order, mostly above every slot: end() is the right hint.
    bool fresh = false;
    auto it = window_.Admit(window_.end(), std::move(e), ts->window, /*reserved=*/true, &fresh);
    if (!fresh) continue;
    Slot& slot = it->second;
    if (!slot.entry.status.ok()) {
      // A copy found in Kafka for it leaves with it: its bytes changed on disk after the
      // copy was produced, and the WAL refuses to replay a dead letter that does not
      // verify, so no duplicate can come of the discard. Kept, the copy would hold its
      // partition's watermark for the life of the process (HoldWatermarks).
      in_doubt_.TakeFound(seq);
      // Counted under the topic its first bytes name, as the reader counted it.
      slot.entry.record.topic = std::string(ts_name);
      // Quarantined, never a crash loop: the record is kept as stored in the dead letters.
      Discard(seq, slot, kReasonCorrupt, slot.entry.status.ToString());
      continue;
    }
    if (!layout || ts_name != layout_topic) {
      layout = options_.partitions->Get(slot.entry.record.topic);
      layout_topic = ts_name;
    }
    if (ts->pace.pending_since_ms == 0) ts->pace.pending_since_ms = now;
    if (AdmitInDoubt(seq, slot, *ts, now)) continue;  // found in Kafka: settled
    Enqueue(seq, slot, *layout, *ts);
  }
  inflight_.store(window_.size());
  return !entries.empty();
}

void DrainLoop::Evict(const Shares& shares) {
  // An entry of an ordered lane stays while a newer entry of its lane may be in the
  // client (a failed entry waiting for its retry, its newer key mates' reports late):
  // read again, it would go out after them. The newest go first, so what leaves a lane
  // is always its newest entries.
  auto forgettable = [](TopicState& ts, const Slot& slot, uint64_t seq) {
    if (slot.lane == kLaneUnordered || seq > ts.lanes.Of(slot.lane).produced_max) return true;
    for (const auto& [p, n] : ts.lanes.in_kafka) {
      if (n > 0 && (slot.lane == kLaneUnrouted || p == slot.lane)) return false;
    }
    return true;
  };
  // A Held lane (no leader, or unknown to the producer yet) keeps at most its share of
  // the window, none while its topic is over its byte share (a share of about one entry):
  // the rest wait unread, so they cannot crowd out the topic's other partitions.
  for (auto& [name, ts] : topics_) {
    if (ts.lanes.ordered.empty()) continue;
    std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(name);
    if (RerouteDue(ts, *layout)) continue;
    for (auto& [p, lane] : ts.lanes.ordered) {
      auto keep = [&t = ts, &shares] {  // clang < 16 cannot capture a structured binding
        return t.window.bytes() >= shares.bytes ? 0 : shares.parked_lane;
      };
      if (!Held(ts, p, *layout) || ts.lanes.Load(p) <= keep()) continue;
      ts.unread.skipped_lanes.insert(p);
      std::vector<uint64_t> evictable(lane.ready.begin(), lane.ready.end());
      evictable.insert(evictable.end(), lane.waiting.begin(), lane.waiting.end());
      std::sort(evictable.begin(), evictable.end(), std::greater<>());
      for (uint64_t seq : evictable) {
        if (ts.lanes.Load(p) <= keep()) break;
        if (forgettable(ts, window_.at(seq), seq)) Forget(seq, window_.at(seq));
      }
    }
  }
  if (!WindowFull()) return;
  bool someone_waits = false;
  for (const auto& [name, ts] : topics_) {
    if (ts.unread.from != 0 && !shares.Full(ts)) someone_waits = true;
  }
  if (!someone_waits) return;
  for (auto& [name, ts] : topics_) {
    if (ts.window.messages() <= shares.messages && ts.window.bytes() <= shares.bytes) continue;
    if (RerouteDue(ts, *options_.partitions->Get(name))) continue;
    // Only entries not handed to the producer can leave; the newest go first, so the
    // topic keeps its oldest entries and its order. A topic keeps one entry even when
    // it alone outsizes the byte share: evicted, it would be read again at its next
    // turn and evicted again, and topics whose entries all outsize their shares would
    // empty the window every pass with nothing ever produced.
    std::vector<uint64_t> evictable;
    auto collect = [&](const Lane& lane) {
      evictable.insert(evictable.end(), lane.ready.begin(), lane.ready.end());
      evictable.insert(evictable.end(), lane.waiting.begin(), lane.waiting.end());
    };
    collect(ts.lanes.unrouted);
    collect(ts.lanes.unordered);
    for (const auto& [p, lane] : ts.lanes.ordered) collect(lane);
    std::sort(evictable.begin(), evictable.end(), std::greater<>());
    for (uint64_t seq : evictable) {
      if (ts.window.messages() <= 1 ||
          (ts.window.messages() <= shares.messages && ts.window.bytes() <= shares.bytes)) {
        break;
      }
      if (forgettable(ts, window_.at(seq), seq)) Forget(seq, window_.at(seq));
    }
  }
  inflight_.store(window_.size());
}

void DrainLoop::Forget(uint64_t seq, Slot& slot) {
  Unqueue(seq, slot);
  TopicState& ts = topics_[slot.entry.record.topic];
  const uint64_t scan_from = ts.unread.scan_from;
  ts.unread.Mark(seq, slot.entry.record.receive_time_ms);
  // An entry of a skipped lane is found again when the lane's partition has a leader;
  // the next pass need not start below where it would anyway. Only below the cursor:
  // there every entry under scan_from not in the window is of a skipped lane. Above it
  // (after a WAL reopen put the cursor back to the failed writes) nothing is known of the
  // entries between, and a key's older entry there would be passed over.
  if (ts.unread.skipped_lanes.count(slot.lane) && scan_from != 0 && scan_from <= reader_.cursor()) {
    ts.unread.scan_from = scan_from;
  }
  window_.Erase(window_.find(seq), ts.window);
}

}  // namespace kspool::agent
