// DrainLoop: producing the lanes (drain_routing.cc puts entries into them).
//
// An entry bound for a partition (explicit, or by its key) waits in that partition's
// lane, produced in sequence order; a lane whose partition has no leader is held back
// alone. An entry without a key goes to the next partition that has a leader. Until a
// topic's partitions are known (the first metadata answer), the client partitions its
// entries, and a failure there holds back the whole topic, as it must for keyed order.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "agent/drain/drain_loop.h"
#include "agent/drain/discard_reasons.h"
#include "base/check.h"

namespace kspool::agent {
namespace {

// Unkeyed messages go to the topic's sticky partition (sticky_partitioner.h) among those
// with a leader that the producer does not refuse as unknown (TopicState::producer);
// nullopt when no partition can take them.
std::optional<int32_t> PickPartition(TopicState& ts, const TopicLayout& layout, int64_t now) {
  return ts.sticky.Pick(layout.leaders.size(), now, [&](int32_t p) {
    return layout.HasLeader(p) && ts.producer.Takes(p, now);
  });
}

}  // namespace

void DrainLoop::ProduceDue(int64_t now) {
  if (!producer_) return;
  to_purge_.clear();  // what this pass finds: a partition may have its leader again
  bool queue_full = false;
  for (auto& [name, ts] : topics_) {
    if (ts.window.messages() == 0 && ts.unread.skipped_lanes.empty()) continue;
    std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(name);
    for (int32_t lane : ts.unread.skipped_lanes) {
      if (!Held(ts, lane, *layout)) {
        // A partition has a leader again (or its retry is due): read what was left
        // unread for it.
        ts.unread.scan_from = ts.unread.from;
        ts.unread.skipped_lanes.clear();
        break;
      }
    }
    for (const auto& [p, n] : ts.lanes.in_kafka) {
      // The client holds entries for a partition that lost its leader: take them back,
      // so that those without a key go elsewhere and the rest wait here, not there.
      if (n > 0 && p >= 0 && layout->status.ok() && !layout->HasLeader(p)) {
        to_purge_.insert({name, p});
      }
      // The client holds an entry past the age limit (ExpireInClient): what it queues for
      // that partition comes back (all the topic's, for entries it partitioned itself),
      // and the expired ones are discarded.
      if (n > 0 && ts.producer.holds_expired.count(p)) {
        to_purge_.insert({name, p == kAnyPartition ? kEveryPartition : p});
      }
      // Entries the client partitioned itself before the layout was known: those it
      // holds for a partition without a leader come back too, or the routing by the
      // layout (Reroute waits for them) would hold the whole topic until it gives up.
      if (n > 0 && p == kAnyPartition && layout->status.ok()) {
        for (int32_t q = 0; q < layout->partition_count(); ++q) {
          if (layout->HasLeader(q)) continue;
          to_purge_.insert({name, q});
          to_purge_.insert({name, kAnyPartition});  // not yet partitioned
        }
      }
    }
    if (RerouteDue(ts, *layout) && !Reroute(name, ts, *layout)) {
      continue;  // waits for the reports of entries routed by the old partition count
    }
    // The unrouted lane goes first. While it waits (for its retry, for the client's
    // answer to its last round, for its topic's reconciliation), the topic's other lanes
    // wait too: the client partitions those entries, so any lane may hold their keys.
    if (WhyLaneWaits(ts, kLaneUnrouted, *layout, now) != LaneWait::kGo) continue;
    ProduceLane(ts, ts.lanes.unrouted, kLaneUnrouted, *layout, now, &queue_full);
    if (queue_full) break;
    // It failed a round or stopped at an in-doubt entry further in: the same. (The client
    // busy with the round just handed over holds back only the unrouted lane's next one.)
    if (const LaneWait w = WhyLaneWaits(ts, kLaneUnrouted, *layout, now);
        w == LaneWait::kBackoff || w == LaneWait::kReconciling) {
      continue;
    }
    for (auto& [p, lane] : ts.lanes.ordered) {
      if (lane.empty() || WhyLaneWaits(ts, p, *layout, now) != LaneWait::kGo) continue;
      ProduceLane(ts, lane, p, *layout, now, &queue_full);
      if (queue_full) break;
    }
    if (queue_full) break;
    ProduceLane(ts, ts.lanes.unordered, kLaneUnordered, *layout, now, &queue_full);
    if (queue_full) break;
  }
  if (!to_purge_.empty() && now >= next_purge_ms_) {
    next_purge_ms_ = now + static_cast<int64_t>(options_.purge_interval_ms);
    spdlog::warn("kafka: {} partition(s) lost their leader or hold messages past "
                 "--max-message-age (first: {} [{}]); taking back the messages queued for "
                 "them (expired ones are discarded, keyed ones wait for the leader, others "
                 "go to other partitions)",
                 to_purge_.size(), to_purge_.begin()->topic, to_purge_.begin()->partition);
    Degraded("leaderless_partition_purge");
    producer_->PurgeQueued(std::vector<TopicPartition>(to_purge_.begin(), to_purge_.end()));
    for (const TopicPartition& tp : to_purge_) {
      topics_[tp.topic].producer.holds_expired.erase(
          tp.partition == kEveryPartition ? kAnyPartition : tp.partition);
    }
    to_purge_.clear();
  }
}

void DrainLoop::ProduceLane(TopicState& ts, Lane& lane, int32_t lane_id, const TopicLayout& layout,
                            int64_t now, bool* queue_full) {
  const bool ordered = lane_id != kLaneUnordered;
  if (!lane.waiting.empty() && now >= lane.retry_at_ms) {
    std::deque<uint64_t> merged;
    std::merge(lane.ready.begin(), lane.ready.end(), lane.waiting.begin(), lane.waiting.end(),
               std::back_inserter(merged));
    lane.ready.swap(merged);
    lane.waiting.clear();
  }
  if (ordered && !lane.waiting.empty()) return;  // newer entries wait behind the failed ones
  // Nothing below erases a slot (only the settle and Forget do), so `last` stays valid.
  Window::iterator last = window_.end();
  while (!lane.ready.empty()) {
    const uint64_t seq = lane.ready.front();
    last = window_.FindNear(seq, last);
    if (last == window_.end()) {  // as window_.at() did: a lane lists only slots
      CheckFailed(__FILE__, __LINE__, "lane entry " + std::to_string(seq) + " has no slot");
    }
    Slot& slot = last->second;
    // The in-doubt gates come before the age limit: an entry that may be in Kafka is not
    // expired until its reconciliation answered (drain_expire.cc).
    if (!ordered && InDoubtHeld(ts, seq)) {
      lane.ready.pop_front();
      HoldUnkeyed(lane, seq, now);  // until its topic is reconciled
      continue;
    }
    if (lane_id >= 0 && InDoubtKeyHeld(ts, seq, slot, layout)) return;  // the lane waits
    // Routed by the client: an in-doubt entry waits for the whole topic's reconciliation,
    // and the lane's newer entries behind it (a suspect may follow entries that are not).
    if (lane_id == kLaneUnrouted && InDoubtHeld(ts, seq)) return;
    if (Expired(slot)) {
      lane.ready.pop_front();
      Discard(seq, slot, kReasonExpired, "older than --max-message-age");
      continue;
    }
    int32_t partition = slot.entry.record.partition;  // explicit, or kAnyPartition
    if (lane_id >= 0) {
      partition = lane_id;
    } else if (lane_id == kLaneUnordered) {
      std::optional<int32_t> p = PickPartition(ts, layout, now);
      if (!p) return;  // no partition has a leader: wait for one
      partition = *p;
    }
    // An entry refused in a batch as too large travels alone: it waits for the partition
    // to be empty, and nothing else goes there until its report.
    if (ts.lanes.alone.count(partition)) return;
    if (slot.alone) {
      auto k = ts.lanes.in_kafka.find(partition);
      if (k != ts.lanes.in_kafka.end() && k->second > 0) return;
    }
    if (!RoutingSaved(ts, slot, lane_id, layout)) return;  // the lane waits for the WAL
    DeliveryReport r = producer_->Produce(slot.entry, partition);
    if (r.result == DeliveryResult::kQueueFull) {
      *queue_full = true;  // try again after the next poll
      return;
    }
    lane.ready.pop_front();
    ++slot.attempts;
    slot.state = Slot::kInKafka;
    slot.produced_to = partition;
    ++ts.lanes.in_kafka[partition];
    if (r.result != DeliveryResult::kQueued) {
      r.seq = seq;
      HandleReports({std::move(r)}, now);
      if (ordered && !lane.waiting.empty()) return;  // keep the rest behind the failed one
      continue;
    }
    if (slot.alone) ts.lanes.alone.insert(partition);
    lane.produced_max = std::max(lane.produced_max, seq);
    // Handed to Kafka before by this process (see kspool_messages_redelivered_total).
    if (slot.attempts > 1) {
      redelivered_.fetch_add(1);
      if (options_.metrics) options_.metrics->Redelivered(slot.entry.record.topic);
    }
  }
}

}  // namespace kspool::agent
