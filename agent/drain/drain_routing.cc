// DrainLoop: routing entries into lanes (drain_lanes.h), and routing them again when a
// topic's partition count changes. Once known, a topic's last known layout routes its
// entries even while metadata lookups fail, so an entry never moves to a lane where it
// could overtake an older entry of its key. A keyed entry's partition is the Java
// client's (murmur2), so kspool and other producers agree on it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "agent/drain/drain_loop.h"

namespace kspool::agent {

uint32_t Murmur2(std::string_view key) {
  // MurmurHash2 as Kafka's Java client has it (Utils.murmur2): seed 0x9747b28c, the
  // key read in little-endian 4-byte words.
  constexpr uint32_t kSeed = 0x9747b28c;
  constexpr uint32_t kM = 0x5bd1e995;
  constexpr int kR = 24;
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  size_t len = key.size();
  uint32_t h = kSeed ^ static_cast<uint32_t>(len);
  while (len >= 4) {
    uint32_t k = static_cast<uint32_t>(data[0]) | static_cast<uint32_t>(data[1]) << 8 |
                 static_cast<uint32_t>(data[2]) << 16 | static_cast<uint32_t>(data[3]) << 24;
    k *= kM;
    k ^= k >> kR;
    k *= kM;
    h *= kM;
    h ^= k;
    data += 4;
    len -= 4;
  }
  switch (len) {
    case 3:
      h ^= static_cast<uint32_t>(data[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(data[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= data[0];
      h *= kM;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

int32_t KeyPartition(std::string_view key, int partition_count) {
  // The Java client's default partitioner (and the C client's "murmur2"): the hash made
  // positive by masking its sign bit, modulo the partition count.
  return static_cast<int32_t>((Murmur2(key) & 0x7fffffff) % static_cast<uint32_t>(partition_count));
}

int32_t LaneFor(int32_t partition, const std::optional<std::string_view>& key,
                const TopicLayout& layout) {
  // A failed lookup keeps the last known partitions (PartitionCache): routing by them
  // keeps a key's entries in one lane, in order, while the lookups fail.
  if (layout.partition_count() == 0) return kLaneUnrouted;
  if (partition >= 0) return partition;
  if (key) return KeyPartition(*key, layout.partition_count());
  return kLaneUnordered;
}

void DrainLoop::Enqueue(uint64_t seq, Slot& slot, const TopicLayout& layout) {
  Enqueue(seq, slot, layout, topics_[slot.entry.record.topic]);
}

void DrainLoop::Enqueue(uint64_t seq, Slot& slot, const TopicLayout& layout, TopicState& ts) {
  const wal::Record& r = slot.entry.record;
  slot.lane =
      LaneFor(r.partition, r.key ? std::optional<std::string_view>(*r.key) : std::nullopt, layout);
  slot.state = Slot::kReady;
  if (slot.lane >= 0 && r.partition < 0 && layout.partition_count() != ts.routing.partitions) {
    ts.routing.otherwise = true;  // a keyed entry: Reroute is due until it has run
  }
  ts.lanes.Of(slot.lane).Insert(seq);
}

void DrainLoop::Unqueue(uint64_t seq, const Slot& slot) {
  topics_[slot.entry.record.topic].lanes.Of(slot.lane).Remove(seq);
}

bool DrainLoop::Reroute(const std::string& topic, TopicState& ts, const TopicLayout& layout) {
  // Entries handed to the producer under another layout (the old partition count, or
  // the client's own while the topic's partitions were unknown: its metadata may lag, as
  // after a topic was recreated) are answered first, or a newer entry of their key,
  // routed by the new layout, could overtake them.
  if (ts.lanes.InClient()) return false;
  // Saved now, not only before a keyed entry goes out, so that after a crash the keyed
  // entries of a topic whose count never changed wait for their own partition only,
  // also those that were never produced. Failing, it is tried again before one goes.
  SaveRouting(topic, ts, layout.partition_count());
  std::vector<uint64_t> keyed;
  for (auto& [p, lane] : ts.lanes.ordered) {
    auto collect = [&](uint64_t seq) {
      const wal::Record& r = window_.at(seq).entry.record;
      if (r.partition < 0 && r.key) keyed.push_back(seq);
    };
    std::for_each(lane.ready.begin(), lane.ready.end(), collect);
    std::for_each(lane.waiting.begin(), lane.waiting.end(), collect);
  }
  // What waited unrouted (also for a retry) takes its lane now, before anything newer.
  keyed.insert(keyed.end(), ts.lanes.unrouted.ready.begin(), ts.lanes.unrouted.ready.end());
  keyed.insert(keyed.end(), ts.lanes.unrouted.waiting.begin(), ts.lanes.unrouted.waiting.end());
  // Lanes keep sequence order (Lane::Insert), so each key's entries stay in order.
  for (uint64_t seq : keyed) {
    Slot& slot = window_.at(seq);
    Unqueue(seq, slot);
    Enqueue(seq, slot, layout);
  }
  for (auto it = ts.lanes.ordered.begin(); it != ts.lanes.ordered.end();) {
    it = it->second.empty() ? ts.lanes.ordered.erase(it) : std::next(it);
  }
  // The lanes skipped for a leaderless partition were numbered by the old count: the
  // next catch-up looks at every unread entry again (CatchUp waits for this), so a key's
  // entries are taken in order into their new lanes.
  if (ts.unread.from != 0) ts.unread.scan_from = ts.unread.from;
  ts.unread.skipped_lanes.clear();
  ts.producer.lags.clear();
  if (ts.routing.partitions != 0) {
    spdlog::warn("kafka: topic {} has {} partitions now, not {}; {} keyed entries routed again",
                 topic, layout.partition_count(), ts.routing.partitions, keyed.size());
  }
  ts.routing.partitions = layout.partition_count();
  ts.routing.otherwise = false;
  return true;
}

const char* LaneWaitName(LaneWait w) {
  switch (w) {
    case LaneWait::kGo:
      return "go";
    case LaneWait::kNoLeader:
      return "no leader";
    case LaneWait::kReconciling:
      return "reconciling";
    case LaneWait::kClientLags:
      return "client lags";
    case LaneWait::kRerouting:
      return "rerouting";
    case LaneWait::kBackoff:
      return "backoff";
    case LaneWait::kClientBusy:
      return "client busy";
  }
  return "?";
}

LaneWait DrainLoop::WhyLaneWaits(const TopicState& ts, int32_t lane_id, const TopicLayout& layout,
                                 int64_t now) const {
  if (lane_id >= 0) {
    // Its partition has no leader: produced there, its entries would wait in the client,
    // where they can neither expire nor move (ProduceDue takes back what is there).
    if (Parked(lane_id, layout)) return LaneWait::kNoLeader;
    // Its partition's copies in Kafka are not read back yet (drain_reconcile.cc).
    if (ts.gate.HoldsPartition(lane_id)) return LaneWait::kReconciling;
    // The producer refused the partition as unknown: its metadata lags the agent's.
    if (!ts.producer.lags.empty()) {
      auto lag = ts.producer.lags.find(lane_id);
      if (lag != ts.producer.lags.end() && now < lag->second) return LaneWait::kClientLags;
    }
  }
  const Lane* lane = nullptr;
  if (lane_id == kLaneUnrouted) {
    lane = &ts.lanes.unrouted;
    // Routed by the client: an in-doubt entry there waits for the whole topic's
    // reconciliation, and the lane's newer entries behind it.
    if (!lane->ready.empty() && InDoubtHeld(ts, lane->ready.front())) return LaneWait::kReconciling;
  } else if (lane_id == kLaneUnordered) {
    lane = &ts.lanes.unordered;
  } else if (auto l = ts.lanes.ordered.find(lane_id); l != ts.lanes.ordered.end()) {
    lane = &l->second;
  }
  // A key's entries may sit in two lanes until Reroute has run (RerouteDue).
  if (RerouteDue(ts, layout)) return LaneWait::kRerouting;
  // An ordered lane's newer entries wait behind its failed ones, so that a retry never
  // reorders a partition; the unordered lane holds back only the failed ones.
  if (lane && lane_id != kLaneUnordered && !lane->waiting.empty() && now < lane->retry_at_ms) {
    return LaneWait::kBackoff;
  }
  // The client partitions the unrouted lane by the partitions it knows, which may change
  // between two rounds (a topic recreated smaller): a round for a partition that vanished
  // would fail after a newer round of its keys landed. The next round goes out once the
  // client answered the last.
  if (lane_id == kLaneUnrouted && !lane->empty() && ts.lanes.InClient())
    return LaneWait::kClientBusy;
  return LaneWait::kGo;
}

void DrainLoop::Requeue(uint64_t seq, Slot& slot) {
  TopicState& ts = topics_[slot.entry.record.topic];
  auto k = ts.lanes.in_kafka.find(slot.produced_to);
  if (k != ts.lanes.in_kafka.end() && k->second > 0) --k->second;
  if (slot.alone) ts.lanes.alone.erase(slot.produced_to);
  // Re-routed with what is known now: an entry without a key finds a partition that
  // has a leader; a keyed one stays in its key's lane (the last known layout, also while
  // metadata lookups fail).
  Enqueue(seq, slot, *options_.partitions->Get(slot.entry.record.topic));
}

}  // namespace kspool::agent
