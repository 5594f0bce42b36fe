// DrainLoop: reconciliation at start (reconciler.h).
//
// The entries in the WAL when the drain starts are "in doubt": the process before may
// have had them acknowledged by Kafka without settling them. The first time the reader
// admits one of a topic, the drain asks the Reconciler for that topic and holds back
// (TopicState::gate):
//  * each ordered lane (a key's or an explicit partition's) until its partition is
//    released: its in-doubt entries and, behind them in the lane, the new entries of
//    their keys (order per key); the lane keeps its share of the window as a leaderless
//    partition's does (Held), so the topic's other partitions go on. A keyed in-doubt
//    entry also waits for every partition its key had under a smaller partition count
//    it may have been produced with (InDoubtKeyHeld): the topic may have grown since.
//    The routing bounds the drain saves whenever its count for a topic changes
//    (SaveRouting, wal/routing_bounds.h) say which counts: with a count that never
//    changed, only its key's partition of today. A topic recreated smaller lost its
//    copies with its old partitions;
//  * the topic's unkeyed in-doubt entries until every partition is released (they may
//    be in any of them); they wait in the unordered lane's `waiting` set, looked at again
//    every kRecheckMs, while the topic's new unkeyed entries are produced.
// Copies found are settled as delivered at the partition and offset found, through the
// normal settle path (delivery index, watermark, listener); a suspect's copy leaves the
// watermark (SettleFound). Other topics are never held.
// Until a partition is read back, and while a copy found there waits to be read from
// the WAL, the settles of new deliveries there leave its watermark (HoldWatermarks):
// raised past such a copy, it would hide it from the next start's read after a crash.
// Every hold ends after reconcile_max_hold_ms (counted as "max_hold").
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "agent/drain/drain_loop.h"

namespace kspool::agent {
namespace {
constexpr int64_t kRecheckMs = 200;  // held unkeyed entries: how often the gate is looked at
}  // namespace

bool DrainLoop::AdmitInDoubt(uint64_t seq, Slot& slot, TopicState& ts, int64_t now) {
  if (!options_.reconciler || !InDoubt(seq)) return false;
  if (std::optional<FoundCopy> copy = in_doubt_.TakeFound(seq)) {
    SettleFound(seq, slot, *copy, now);
    return true;
  }
  AskReconcile(slot.entry.record.topic, ts, seq, slot.entry.record.receive_time_ms);
  return false;
}

void DrainLoop::AskReconcile(std::string_view topic, TopicState& ts, uint64_t seq,
                             int64_t receive_time_ms) {
  if (!options_.reconciler || !in_doubt_.FirstAsk(topic, seq)) return;
  if (!ts.gate.holding) ts.gate.since_ms = options_.clock->MonotonicMillis();
  ts.gate.holding = true;
  // From the watermarks of the start: they cover a suspects' round of this topic too.
  ts.gate.round = 0;
  ts.gate.released.clear();
  gates_holding_ = true;
  // Offered in order per topic: the first in-doubt entry seen is the topic's oldest.
  spdlog::info(
      "reconcile: holding the in-doubt entries of topic '{}' (from seq {}) until "
      "its partitions are read back from Kafka",
      topic, seq);
  options_.reconciler->Reconcile(std::string(topic), receive_time_ms);
}

void DrainLoop::Suspect(uint64_t seq, const Slot& slot, const char* why) {
  if (!options_.reconciler) return;
  const std::string& topic = slot.entry.record.topic;
  TopicState& ts = topics_[topic];
  if (!ts.gate.holding) ts.gate.since_ms = options_.clock->MonotonicMillis();
  ts.gate.holding = true;
  ts.gate.released.clear();  // a round in progress may have read past this attempt
  ts.gate.round = in_doubt_.Suspect(seq, topic, slot.entry.record.receive_time_ms, why);
  gates_holding_ = true;
}

void DrainLoop::AskRoundsDue() {
  for (const auto& [topic, due] : in_doubt_.TakeRoundsDue()) {
    auto t = topics_.find(topic);
    if (t == topics_.end() || !t->second.gate.holding) continue;
    spdlog::info(
        "reconcile: topic '{}': entries may be in Kafka unreported ({}); holding them "
        "until its partitions are read back again",
        topic, due.why);
    options_.reconciler->ReconcileAgain(topic, due.oldest_receive_ms, t->second.gate.round);
  }
}

void DrainLoop::HoldWatermarks(std::vector<wal::Outcome>* batch) const {
  if (!options_.reconciler || (!gates_holding_ && in_doubt_.found().empty())) return;
  std::set<std::pair<std::string_view, int32_t>> found_on;
  for (const auto& [seq, f] : in_doubt_.found()) found_on.insert({f.topic, f.copy.partition});
  for (wal::Outcome& o : *batch) {
    if (!o.delivered() || o.partition < 0) continue;
    auto t = topics_.find(o.topic);
    if ((t != topics_.end() && t->second.gate.HoldsPartition(o.partition)) ||
        found_on.count({o.topic, o.partition})) {
      o.raises_watermark = false;
    }
  }
}

void DrainLoop::SettleFound(uint64_t seq, Slot& slot, const FoundCopy& copy, int64_t now) {
  wal::Outcome delivered = wal::Outcome::Delivered(seq, slot.entry.record.topic, copy.partition,
                                                   copy.offset, options_.clock->NowMillis());
  delivered.size = slot.entry.size;
  delivered.receive_time_ms = slot.entry.record.receive_time_ms;
  // A suspect's copy was written by this process, outside its partition's report order:
  // entries delivered there before it may still wait for their reports, at lower
  // offsets, and a watermark raised past them would hide them from the next start's
  // read. Copies of entries in doubt since the start were all written before anything
  // this process produced, so below every report it still waits for: they raise it.
  delivered.raises_watermark = !in_doubt_.IsSuspect(seq);
  Finish(seq, slot, std::move(delivered), now);
}

void DrainLoop::PollReconciler(int64_t now) {
  if (!options_.reconciler) return;
  std::vector<ReconcileResult> results;
  options_.reconciler->Poll(&results);
  for (ReconcileResult& r : results) {
    uint64_t settled_before = 0;
    if (options_.metrics && (r.bytes_read > 0 || r.seconds > 0)) {
      options_.metrics->ReconcileRead(r.bytes_read, r.seconds);
    }
    uint64_t found = 0;
    for (const FoundCopy& c : r.found) {
      if (!InDoubt(c.seq)) continue;  // not ours to settle: produced by this process
      ++found;
      auto w = window_.find(c.seq);
      if (w == window_.end()) {
        if (MayBeUnread(r.topic, c.seq)) {
          in_doubt_.KeepFound(c.seq, r.topic, c);  // settled when read (AdmitInDoubt, ExpireUnread)
        } else {
          // Settled already: by an earlier round's copy, or produced after its hold ended
          // (then this copy and that delivery are two). Kept, it would hold the
          // partition's watermark for good (HoldWatermarks).
          ++settled_before;
        }
        continue;
      }
      Slot& slot = w->second;
      // Handed to the producer already (the hold ended first): that copy is a duplicate.
      if (slot.state != Slot::kReady && slot.state != Slot::kBackoff) continue;
      Unqueue(c.seq, slot);
      SettleFound(c.seq, slot, c, now);
    }
    if (found > 0) {
      reconcile_found_.fetch_add(found);
      if (options_.metrics) options_.metrics->ReconcileFound(found);
    }
    if (settled_before > 0) {
      spdlog::info("reconcile: topic '{}': {} cop(ies) found for entries settled before "
                   "(round {})",
                   r.topic, settled_before, r.round);
    }
    if (!r.ended_early.empty()) {
      spdlog::warn("reconcile: topic '{}': {} partition(s) released before they were read to "
                   "their end ({}): their in-doubt entries not found are produced (a duplicate "
                   "is possible)",
                   r.topic, r.released.size(), r.ended_early);
      if (options_.metrics) options_.metrics->ReconcileEndedEarly(r.ended_early);
    }
    auto t = topics_.find(r.topic);
    if (t == topics_.end() || !t->second.gate.holding) continue;
    ReconcileGate& gate = t->second.gate;
    // An older round's read may have passed where a newer suspect's attempt landed: its
    // copies count, its releases do not.
    if (r.round != gate.round) continue;
    gate.released.insert(r.released.begin(), r.released.end());
    if (r.all_released) {
      spdlog::info("reconcile: topic '{}' reconciled in {} ms; {} in-doubt entries found in Kafka "
                   "so far",
                   r.topic, now - gate.since_ms, reconcile_found_.load());
      gate = ReconcileGate{};
      t->second.lanes.unordered.retry_at_ms = 0;  // its held unkeyed entries go now
    }
  }
  PruneFound(now);
  bool any = false;
  for (auto& [name, ts] : topics_) {
    if (!ts.gate.holding) continue;
    if (now - ts.gate.since_ms >= static_cast<int64_t>(options_.reconcile_max_hold_ms)) {
      spdlog::warn("reconcile: topic '{}': still not read back after {} ms "
                   "(--reconcile-max-hold); producing its in-doubt entries not found (a "
                   "duplicate is possible)",
                   name, now - ts.gate.since_ms);
      if (options_.metrics) options_.metrics->ReconcileEndedEarly("max_hold");
      ts.gate = ReconcileGate{};
      ts.lanes.unordered.retry_at_ms = 0;
      continue;
    }
    any = true;
  }
  gates_holding_ = any;
  MutexLock l(&stuck_mu_);
  if (!any && reconciling_.empty()) return;
  reconciling_.clear();
  for (const auto& [name, ts] : topics_) {
    if (!ts.gate.holding) continue;
    reconciling_.push_back({name, (now - ts.gate.since_ms) / 1000.0,
                            std::vector<int32_t>(ts.gate.released.begin(), ts.gate.released.end())});
  }
}

bool DrainLoop::MayBeUnread(std::string_view topic, uint64_t seq) const {
  if (seq >= reader_.cursor()) return true;  // also everything after a reopen put the cursor back
  auto t = topics_.find(topic);
  // Entries below the cursor not in the window are unread only from unread.from on
  // (TopicState); a topic without state has none unread (dropped only while idle).
  return t != topics_.end() && t->second.unread.from != 0 && seq >= t->second.unread.from;
}

void DrainLoop::PruneFound(int64_t now) {
  in_doubt_.PruneFound(now, kRecheckMs, [&](uint64_t seq, const std::string& topic) {
    return !window_.count(seq) && !MayBeUnread(topic, seq);
  });
}

std::vector<ReconcilingTopic> DrainLoop::Reconciling() const {
  MutexLock l(&stuck_mu_);
  return reconciling_;
}

void DrainLoop::LoadRouting(const std::string& topic, TopicState& ts) {
  if (ts.routing.bounds) return;
  absl::StatusOr<std::vector<wal::RoutingBound>> saved = wal_->RoutingBounds(topic);
  if (!saved.ok()) {
    spdlog::warn(
        "drain: reading the routing bounds of topic '{}' failed ({}): its keyed "
        "entries from before this start wait for every partition their key may "
        "have had",
        topic, saved.status().ToString());
    Degraded("routing_bounds_unread");
  }
  ts.routing.bounds = saved.ok() ? std::move(saved).value() : std::vector<wal::RoutingBound>{};
}

bool DrainLoop::SaveRouting(const std::string& topic, TopicState& ts, int32_t count) {
  LoadRouting(topic, ts);
  // The newest pair already says it: every keyed entry this process produces from now on
  // goes with that count (count 1: partitioned by the client, any count).
  if (!ts.routing.bounds->empty() && ts.routing.bounds->back().partitions == count) {
    if (!ts.routing.listed) routed_topics_.insert(topic);  // once per TopicState, not per entry
    ts.routing.listed = true;
    return true;
  }
  // Entries at or above the first this process appended are produced by it alone; once
  // it routed the topic, those it has not read yet. Those below are covered too: the
  // lowest count of an entry is the minimum over its pair and every later one.
  const uint64_t from = routed_topics_.count(topic) ? reader_.Horizon() : in_doubt_.start();
  absl::StatusOr<std::vector<wal::RoutingBound>> saved =
      wal_->SaveRoutingBound(topic, {from, count});
  if (!saved.ok()) {
    Degraded("routing_bound_unsaved");
    const int64_t now = options_.clock->MonotonicMillis();
    if (now - last_routing_error_log_ms_ > 5000) {
      spdlog::warn(
          "drain: saving the routing bound of topic '{}' ({} partitions) failed, its "
          "keyed entries wait: {}",
          topic, count, saved.status().ToString());
      last_routing_error_log_ms_ = now;
    }
    return false;
  }
  ts.routing.bounds = std::move(saved).value();
  routed_topics_.insert(topic);
  ts.routing.listed = true;
  return true;
}

bool DrainLoop::RoutingSaved(TopicState& ts, const Slot& slot, int32_t lane_id,
                             const TopicLayout& layout) {
  const wal::Record& r = slot.entry.record;
  if (!r.key || r.partition >= 0) return true;  // an explicit partition needs no bound
  // Unrouted, the client partitions it by a count the drain does not know: any count.
  return SaveRouting(r.topic, ts, lane_id == kLaneUnrouted ? 1 : layout.partition_count());
}

bool DrainLoop::InDoubtKeyHeld(const TopicState& ts, uint64_t seq, const Slot& slot,
                               const TopicLayout& layout) const {
  if (!ts.gate.holding || !InDoubt(seq)) return false;
  const wal::Record& r = slot.entry.record;
  if (r.partition >= 0 || !r.key) return false;  // an explicit partition: its lane's gate
  // The partition of the key under each count it may have been produced with (the
  // routing bounds), up to today's; the Java client's hash, computed once (KeyPartition).
  const uint32_t hash = Murmur2(*r.key) & 0x7fffffff;
  const int lowest = ts.routing.bounds ? std::min(wal::LowestRoutedCount(*ts.routing.bounds, seq),
                                                  layout.partition_count())
                                       : 1;
  for (int n = std::max(lowest, 1); n <= layout.partition_count(); ++n) {
    if (!ts.gate.released.count(static_cast<int32_t>(hash % static_cast<uint32_t>(n)))) {
      return true;
    }
  }
  return false;
}

// An unkeyed in-doubt entry whose topic is not reconciled yet: set aside in the lane's
// waiting set, looked at again soon (ProduceLane).
void DrainLoop::HoldUnkeyed(Lane& lane, uint64_t seq, int64_t now) {
  lane.waiting.insert(seq);
  lane.retry_at_ms = std::max(lane.retry_at_ms, now + kRecheckMs);
}

}  // namespace kspool::agent
