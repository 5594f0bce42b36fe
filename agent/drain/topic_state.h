// TopicState: what the drain holds per topic (issue 42's split of the drain: lanes per
// topic), one owner type per concern: the lanes and what the producer holds of them,
// the entries left unread, how keyed entries were routed, what the producer is known
// to refuse or hold, the unknown-topic checks, the sticky partition of unkeyed entries,
// and the pace of deliveries that tells a stuck topic. The window's charge is
// DrainWindow's (drain_window.h), the reconciliation gate the reconciler's
// (drain_reconcile.cc).
//
// Guarantees (Check, run with the drain's invariants): an unread range starts at or
// below where its next catch-up pass does, and skips lanes only while it has a start;
// the producer holds entries of a partition only where its count is positive.
// Thread safety: none; owned by the drain's loop thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/drain/drain_lanes.h"
#include "agent/drain/partition_cache.h"
#include "agent/drain/sticky_partitioner.h"
#include "wal/routing_bounds.h"

namespace kspool::agent {

// A topic's lanes: one per partition its entries are bound for (by explicit choice or
// by key), one for entries without a key, one while its partitions are unknown; and
// what the producer holds of them.
struct TopicLanes {
  std::map<int32_t, Lane> ordered;  // by partition
  Lane unordered;
  Lane unrouted;
  std::map<int32_t, uint64_t> in_kafka;  // entries handed to the producer, by partition
  // Partitions an entry was produced to alone (Slot::alone): nothing else of the topic
  // goes there until its report, so that it travels in a batch of its own.
  std::set<int32_t> alone;

  Lane& Of(int32_t lane) {
    if (lane == kLaneUnordered) return unordered;
    if (lane == kLaneUnrouted) return unrouted;
    return ordered[lane];
  }
  // Entries of an ordered lane in the window: waiting, or handed to the producer.
  uint64_t Load(int32_t lane) const {
    auto l = ordered.find(lane);
    auto k = in_kafka.find(lane);
    return (l == ordered.end() ? 0 : l->second.ready.size() + l->second.waiting.size()) +
           (k == in_kafka.end() ? 0 : k->second);
  }
  // Some of the topic's entries are with the producer, waiting for their reports.
  bool InClient() const {
    return std::any_of(in_kafka.begin(), in_kafka.end(),
                       [](const auto& pn) { return pn.second > 0; });
  }
};

// The topic's entries the reader passed over for lack of room. Every entry of the topic
// below the reader's cursor and at or above `from` is in the window or settled, or was
// skipped (from == 0: none skipped); `receive_ms` is at most the receive time of the
// oldest skipped one.
struct UnreadRange {
  uint64_t from = 0;
  int64_t receive_ms = 0;
  // Where the next catch-up pass starts (>= from): the topic's entries in
  // [from, scan_from) that are not in the window belong to skipped_lanes, lanes whose
  // partition has no leader and already holds its share of the window.
  uint64_t scan_from = 0;
  std::set<int32_t> skipped_lanes;

  void Mark(uint64_t seq, int64_t receive_time_ms) {
    if (from == 0 || seq < from) {
      from = seq;
      receive_ms = receive_time_ms;
    }
    if (scan_from == 0 || seq < scan_from) scan_from = seq;
  }
  void Clear() {
    from = scan_from = 0;
    skipped_lanes.clear();
  }
};

// How the topic's keyed entries in the lanes were routed (DrainLoop::Reroute) and the
// routing bounds saved for it (wal/routing_bounds.h).
struct TopicRouting {
  // The partition count the keyed entries in the lanes were routed by (0: none yet).
  int partitions = 0;
  // A keyed entry took its lane by another count than `partitions` since the last
  // Reroute (read while one was due): the lanes mix two counts until Reroute runs, also
  // if the layout meanwhile went back to `partitions` (a topic that grew, then was
  // recreated as it was).
  bool otherwise = false;
  // The bounds as saved, read once.
  std::optional<std::vector<wal::RoutingBound>> bounds;
  // The topic is in DrainLoop::routed_topics_ (looked up once per state, not per entry).
  bool listed = false;
};

// What the producer is known to refuse or hold for the topic.
struct ProducerView {
  // Partitions the layout has and the producer does not know yet (its metadata lags the
  // agent's, as after partitions were added): until its retry is due (monotonic ms),
  // such a lane is held back as a leaderless partition's is (LaneWait::kClientLags),
  // and entries without a key go to other partitions (the sticky partitioner).
  std::map<int32_t, int64_t> lags;
  // Partitions (kAnyPartition: the client chose one) for which the client holds an entry
  // past the age limit (ExpireOld). Its message timeout counts from the produce, so an
  // entry produced late could stay there up to twice the limit: for a partition whose
  // leader is gone while the metadata still names one, or one the drain cannot name.
  // ProduceDue takes back what the client queues for them (every partition of the topic
  // for kAnyPartition); what was never sent comes back and expires.
  std::set<int32_t> holds_expired;
  // Whether partition `p` can take unkeyed entries now (its refusal's retry is due).
  bool Takes(int32_t p, int64_t now_ms) const {
    if (lags.empty()) return true;
    auto lag = lags.find(p);
    return lag == lags.end() || now_ms >= lag->second;
  }
};

// Unknown-topic checks: fresh metadata answers that said the target is missing.
struct MissingChecks {
  uint64_t generation = 0;
  int answers = 0;
};

// When the topic last had something to send and last delivered: a stuck topic's report.
struct DeliveryPace {
  int64_t pending_since_ms = 0;  // monotonic; 0: nothing to send
  int64_t last_delivery_ms = 0;  // monotonic
  bool reported_stuck = false;
};

struct TopicState {
  ReconcileGate gate;
  TopicCharge window;  // the topic's entries in the window, and their bytes
  TopicLanes lanes;
  UnreadRange unread;
  TopicRouting routing;
  ProducerView producer;
  MissingChecks missing;
  StickyPartitioner sticky;
  DeliveryPace pace;

  bool idle() const { return window.messages() == 0 && unread.from == 0; }
  // The guarantees in the header comment; a message naming `topic` and the first broken.
  absl::Status Check(const std::string& topic) const;
};

// What one topic may hold of the window while others wait for room, and what one of its
// partitions may hold while it has no leader.
struct Shares {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t parked_lane = 1;  // 0 when `messages` is 1 (DrainLoop::Refill)
  bool Full(const TopicState& ts) const {
    return ts.window.messages() >= messages || ts.window.bytes() >= bytes;
  }
};

// The topic's keyed entries were routed by another partition count than the layout's,
// or some of them were (TopicRouting::otherwise): DrainLoop::Reroute is due. Until it
// has run, a key's entries may sit in two lanes, so nothing may be read for the topic
// (CatchUp) or forgotten from it (Evict), or a key's newer entry could go out before an
// older one left unread. Also while lookups fail: the layout keeps the count it last
// knew, by which LaneFor routes new entries.
inline bool RerouteDue(const TopicState& ts, const TopicLayout& layout) {
  return layout.partition_count() > 0 &&
         (layout.partition_count() != ts.routing.partitions || ts.routing.otherwise);
}

}  // namespace kspool::agent
