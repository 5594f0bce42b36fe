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
  if (slot.lane >= 0 && r.partition < 0 && layout.partition_count() != ts.routed_partitions) {
    ts.routed_otherwise = true;  // a keyed entry: Reroute is due until it has run
  }
  ts.LaneOf(slot.lane).Insert(seq);
}

void DrainLoop::Unqueue(uint64_t seq, const Slot& slot) {
  topics_[slot.entry.record.topic].LaneOf(slot.lane).Remove(seq);
}

bool DrainLoop::Reroute(const std::string& topic, TopicState& ts, const TopicLayout& layout) {
  // Entries handed to the producer under another layout (the old partition count, or
  // the client's own while the topic's partitions were unknown: its metadata may lag, as
  // after a topic was recreated) are answered first, or a newer entry of their key,
  // routed by the new layout, could overtake them.
  if (ts.InClient()) return false;
  // Saved now, not only before a keyed entry goes out, so that after a crash the keyed
  // entries of a topic whose count never changed wait for their own partition only,
  // also those that were never produced. Failing, it is tried again before one goes.
  SaveRouting(topic, ts, layout.partition_count());
  std::vector<uint64_t> keyed;
  for (auto& [p, lane] : ts.partitions) {
    auto collect = [&](uint64_t seq) {
      const wal::Record& r = window_.at(seq).entry.record;
      if (r.partition < 0 && r.key) keyed.push_back(seq);
    };
    std::for_each(lane.ready.begin(), lane.ready.end(), collect);
    std::for_each(lane.waiting.begin(), lane.waiting.end(), collect);
  }
  // What waited unrouted (also for a retry) takes its lane now, before anything newer.
  keyed.insert(keyed.end(), ts.unrouted.ready.begin(), ts.unrouted.ready.end());
  keyed.insert(keyed.end(), ts.unrouted.waiting.begin(), ts.unrouted.waiting.end());
  // Lanes keep sequence order (Lane::Insert), so each key's entries stay in order.
  for (uint64_t seq : keyed) {
    Slot& slot = window_.at(seq);
    Unqueue(seq, slot);
    Enqueue(seq, slot, layout);
  }
  for (auto it = ts.partitions.begin(); it != ts.partitions.end();) {
    it = it->second.empty() ? ts.partitions.erase(it) : std::next(it);
  }
  // The lanes skipped for a leaderless partition were numbered by the old count: the
  // next catch-up looks at every unread entry again (CatchUp waits for this), so a key's
  // entries are taken in order into their new lanes.
  if (ts.unread_from != 0) ts.scan_from = ts.unread_from;
  ts.skipped_lanes.clear();
  ts.client_lags.clear();
  if (ts.routed_partitions != 0) {
    spdlog::warn("kafka: topic {} has {} partitions now, not {}; {} keyed entries routed again",
                 topic, layout.partition_count(), ts.routed_partitions, keyed.size());
  }
  ts.routed_partitions = layout.partition_count();
  ts.routed_otherwise = false;
  return true;
}

bool DrainLoop::Held(const TopicState& ts, int32_t lane, const TopicLayout& layout) const {
  if (Parked(lane, layout) || ts.gate.HoldsPartition(lane)) return true;
  if (ts.client_lags.empty()) return false;
  auto it = ts.client_lags.find(lane);
  return it != ts.client_lags.end() && options_.clock->MonotonicMillis() < it->second;
}

void DrainLoop::Requeue(uint64_t seq, Slot& slot) {
  TopicState& ts = topics_[slot.entry.record.topic];
  auto k = ts.in_kafka.find(slot.produced_to);
  if (k != ts.in_kafka.end() && k->second > 0) --k->second;
  if (slot.alone) ts.alone.erase(slot.produced_to);
  // Re-routed with what is known now: an entry without a key finds a partition that
  // has a leader; a keyed one stays in its key's lane (the last known layout, also while
  // metadata lookups fail).
  Enqueue(seq, slot, *options_.partitions->Get(slot.entry.record.topic));
}

}  // namespace kspool::agent
