// DrainLoop: --max-message-age, whatever the state of an entry's partition.
//
// Producing an entry, and a failed produce, check its age; that alone never expires an
// entry that is not produced: one waiting in the lane of a partition without a leader
// (or of a topic whose metadata is unknown), or one left unread in the WAL because its
// lane is parked or its topic holds its share of the window. ExpireOld() looks at both
// every expire interval (a tenth of the age limit, within [50 ms, 1 s]) and discards
// those older than the limit as `expired`, so that such an entry leaves the WAL within
// the limit plus an interval plus the settle delay, and the commit points move on.
// Entries handed to the producer are left to it: the client's message.timeout.ms is at
// most the age limit (agent/kafka/), and a timeout comes back as a failed report, which
// checks the age. But that timeout counts from the produce: an entry the client holds
// past the limit is taken back with what the client queues for its partition
// (ExpireInClient, ProduceDue), since its partition may have lost its leader unseen (the
// metadata failing or late), or be one the drain cannot name (the client partitioned
// it). What was never sent comes back and expires; what may be in Kafka is a suspect.
// Receive times never decrease with the sequence number (the WAL assigns them so), so
// the first unread entry young enough ends the look at a topic's unread entries.
// An entry that may be in Kafka already is never expired before the reconciliation that
// would find it has answered (AwaitsReconciliation): after a restart that took longer
// than the age limit, expiring it would report a message Kafka holds as discarded, put
// it in the dead letters (a replay makes a real duplicate) and hold watermarks back.
// Such an entry left unread stops the look at its topic, and asks for its topic's
// reconciliation if nothing has yet; once answered, one with a copy found is settled as
// delivered there, the others expire.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/drain/discard_reasons.h"
#include "agent/drain/drain_loop.h"

namespace kspool::agent {
namespace {

constexpr char kNeverProduced[] =
    "older than --max-message-age; never produced (its partition had no leader, or its "
    "topic no metadata)";

}  // namespace

void DrainLoop::ExpireOld(int64_t now) {
  const uint64_t age = options_.max_message_age_ms;
  if (age == 0 || now < next_expire_ms_) return;
  next_expire_ms_ = now + std::clamp<int64_t>(static_cast<int64_t>(age / 10), 50, 1000);
  // Expired() reads: now - receive time > age.
  const int64_t cutoff = options_.clock->NowMillis() - static_cast<int64_t>(age);
  for (auto& [name, ts] : topics_) {
    if (ts.window.messages() == 0) continue;
    std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(name);
    ExpireLane(ts, ts.lanes.unrouted, kLaneUnrouted, *layout, cutoff);
    ExpireLane(ts, ts.lanes.unordered, kLaneUnordered, *layout, cutoff);
    for (auto& [p, lane] : ts.lanes.ordered) ExpireLane(ts, lane, p, *layout, cutoff);
  }
  for (auto& [name, ts] : topics_) {
    if (ts.unread.from != 0 && ts.unread.receive_ms < cutoff) ExpireUnread(name, ts, cutoff, now);
  }
  ExpireInClient(cutoff);
  inflight_.store(window_.size());
}

void DrainLoop::ExpireInClient(int64_t cutoff) {
  // What the last look found (a partition's old entries may have been reported since).
  bool in_client = false;
  for (auto& [name, ts] : topics_) {
    ts.producer.holds_expired.clear();
    for (const auto& [p, n] : ts.lanes.in_kafka) in_client |= n > 0;
  }
  if (!in_client) return;
  // Receive times never decrease with the sequence number: the window's expired entries
  // come first, and the first young one (of those whose time is verified) ends the look.
  for (const auto& [seq, slot] : window_) {
    if (!slot.entry.status.ok()) continue;
    if (slot.entry.record.receive_time_ms >= cutoff) break;
    if (slot.state != Slot::kInKafka) continue;
    topics_[slot.entry.record.topic].producer.holds_expired.insert(slot.produced_to);
  }
}

bool DrainLoop::AwaitsReconciliation(const TopicState& ts, uint64_t seq, const Slot& slot,
                                     int32_t lane_id, const TopicLayout& layout) const {
  if (!ts.gate.holding || !InDoubt(seq)) return false;
  // Without a key, or partitioned by the client: its copy may be in any partition.
  if (lane_id < 0) return true;
  return ts.gate.HoldsPartition(lane_id) || InDoubtKeyHeld(ts, seq, slot, layout);
}

bool DrainLoop::AwaitsReconciliation(const TopicState& ts, uint64_t seq, const Slot& slot) const {
  if (!ts.gate.holding || !InDoubt(seq)) return false;
  return AwaitsReconciliation(ts, seq, slot, slot.lane,
                              *options_.partitions->Get(slot.entry.record.topic));
}

void DrainLoop::ExpireLane(TopicState& ts, Lane& lane, int32_t lane_id, const TopicLayout& layout,
                           int64_t cutoff) {
  if (lane.empty()) return;
  // Entries in a lane are not in the client: discarding one leaves the lane's order.
  auto expire = [&](uint64_t seq) {
    Slot& slot = window_.at(seq);
    if (!slot.entry.status.ok() || slot.entry.record.receive_time_ms >= cutoff) return false;
    if (AwaitsReconciliation(ts, seq, slot, lane_id, layout)) return false;
    Discard(seq, slot, kReasonExpired, kNeverProduced);
    return true;
  };
  lane.ready.erase(std::remove_if(lane.ready.begin(), lane.ready.end(), expire), lane.ready.end());
  for (auto it = lane.waiting.begin(); it != lane.waiting.end();) {
    it = expire(*it) ? lane.waiting.erase(it) : std::next(it);
  }
}

void DrainLoop::ExpireUnread(const std::string& topic, TopicState& ts, int64_t cutoff,
                             int64_t now) {
  // The window's room plus the overshoot not yet used (entries expired earlier may still
  // wait for their settle, e.g. while the WAL fails).
  auto headroom = [](uint64_t limit, uint64_t held) { return held < limit ? limit - held : 0; };
  const uint64_t limit =
      headroom(options_.max_inflight_messages + kExpireOvershootMessages, window_.size());
  const uint64_t byte_limit =
      headroom(options_.max_inflight_bytes + kExpireOvershootBytes, window_.bytes());
  if (limit == 0 || byte_limit == 0) return;
  uint64_t taken = 0, taken_bytes = 0;
  int64_t last_ms = 0;  // receive time of the last entry offered, of any topic
  std::optional<int64_t> stopped_at_ms;
  // The first in-doubt entry met while its topic's reconciliation has not answered.
  std::optional<std::pair<uint64_t, int64_t>> in_doubt;
  // In doubt from the start and never asked about, or held for a round (a suspect left
  // unread, as after a WAL reopen: the reader starts again at the head).
  const bool never_asked = options_.reconciler && !in_doubt_.Asked(topic);
  std::vector<wal::Entry> entries;
  uint64_t next = 0;
  absl::Status s = wal_->ScanChoosing(
      {ts.unread.from, reader_.cursor(), options_.scan_max_keys},
      [&](const wal::ScanCandidate& c) {
        if (c.receive_time_ms >= cutoff || taken == limit || taken_bytes >= byte_limit) {
          stopped_at_ms = c.receive_time_ms;  // and every later entry is at least as young
          return wal::ScanChoice::kStop;
        }
        if (c.receive_time_ms != 0) last_ms = c.receive_time_ms;
        if (c.topic != topic || window_.count(c.seq)) return wal::ScanChoice::kSkip;
        if (options_.reconciler && InDoubt(c.seq) &&
            (ts.gate.holding || (never_asked && c.seq < in_doubt_.start()))) {
          in_doubt = {c.seq, c.receive_time_ms};
          stopped_at_ms = c.receive_time_ms;  // the topic's oldest unread entry from here
          return wal::ScanChoice::kStop;
        }
        ++taken;
        taken_bytes += c.size;
        return wal::ScanChoice::kTake;
      },
      &entries, &next);
  if (!s.ok()) {
    ScanFailed(s);
  } else if (!stopped_at_ms && next >= reader_.cursor()) {
    ts.unread.Clear();  // every unread entry of the topic is taken: none is left unread
  } else {
    // The topic's entries below `next` are in the window now (or settled); the rest are
    // at least as young as the entry the look stopped at, or the last one it saw.
    ts.unread.receive_ms = std::max(ts.unread.receive_ms, stopped_at_ms.value_or(last_ms));
    if (next > ts.unread.from) {
      ts.unread.from = next;
      ts.unread.scan_from = std::max(ts.unread.scan_from, next);
    }
  }
  if (in_doubt && !in_doubt_.Asked(topic)) {
    AskReconcile(topic, ts, in_doubt->first, in_doubt->second);
  }
  for (wal::Entry& e : entries) {
    const uint64_t seq = e.seq;
    bool fresh = false;
    auto it = window_.Admit(window_.end(), std::move(e), ts.window, /*reserved=*/false, &fresh);
    KSPOOL_DCHECK(fresh);  // the chooser passed over the window's entries
    if (!fresh) continue;
    Slot& slot = it->second;
    if (!slot.entry.status.ok()) {
      in_doubt_.TakeFound(seq);  // discarded as corrupt all the same (Admit says why)
      slot.entry.record.topic = topic;
      Discard(seq, slot, kReasonCorrupt, slot.entry.status.ToString());
    } else if (std::optional<FoundCopy> copy = in_doubt_.TakeFound(seq)) {
      // Its reconciliation answered and found it in Kafka: delivered there.
      SettleFound(seq, slot, *copy, now);
    } else {
      Discard(seq, slot, kReasonExpired,
              "older than --max-message-age; never read (its partition had no leader, or its "
              "topic held its share of the window)");
    }
  }
}

}  // namespace kspool::agent
