// The drain loop's bookkeeping types: one window slot per WAL entry being sent, lanes
// (entries produced in sequence order and retried together), and how an entry finds
// its lane; per-topic state is topic_state.h.
// Internal to the drain loop. Thread safety: owned by the drain loop's thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "agent/drain/partition_cache.h"
#include "agent/drain/producer.h"
#include "wal/entry.h"
#include "wal/outcome.h"
#include "wal/routing_bounds.h"

namespace kspool::agent {

// Which lane of its topic an entry waits in.
inline constexpr int32_t kLaneUnordered = -1;  // no key: any partition with a leader
inline constexpr int32_t kLaneUnrouted = -2;   // layout unknown: the client partitions
// (>= 0: the partition the entry is bound for, by explicit choice or by its key.)

// Why a lane's entries may not go to the producer now (DrainLoop::WhyLaneWaits), in the
// order it asks. The first three wait for something outside the drain's own pace (a
// leader, a reconciliation, the client's metadata): such a lane is Held, and keeps only
// its share of the window while its topic's other lanes read on.
enum class LaneWait {
  kGo,           // they may
  kNoLeader,     // its partition exists and has no leader (Parked)
  kReconciling,  // its partition, or for the unrouted lane its topic, awaits reconciliation
  kClientLags,   // the producer refused its partition as unknown; the retry is not due
  kRerouting,    // the topic's keyed entries are routed by an old partition count
  kBackoff,      // a failed entry waits for its retry, and an ordered lane's newer ones too
  kClientBusy,   // unrouted: the client has not answered the topic's last round yet
};
const char* LaneWaitName(LaneWait w);
inline bool IsHeld(LaneWait w) {
  return w == LaneWait::kNoLeader || w == LaneWait::kReconciling || w == LaneWait::kClientLags;
}

// The small fields every pass over the window reads come first, next to the map node's
// key: a window of ~100k slots of ~450 bytes does not stay in cache, and a pass that
// only looks at a slot's state then touches one cache line of it, not its last.
struct Slot {
  enum State { kReady, kInKafka, kBackoff, kSettling } state = kReady;
  int attempts = 0;
  int32_t lane = kLaneUnrouted;
  int32_t produced_to = kAnyPartition;  // partition of the last Produce()
  int64_t finished_ms = 0;              // monotonic
  bool batched = false;                 // part of the Settle() call being made
  bool alone = false;  // refused in a batch as too large: produced alone from now on
  wal::Entry entry;
  // Set with kSettling (Settler::Store, Settler::Take). A delivery to the entry's
  // own topic, nearly every outcome, is kept as its numbers; any other outcome whole, on
  // the heap. A slot is 288 bytes instead of 440 with a whole Outcome in it: up to 15 MB
  // less at the default window of 100k slots (--max-inflight-messages).
  struct Delivered {
    int32_t partition = -1;
    int64_t offset = -1;
    int64_t time_ms = 0;
    bool raises_watermark = true;
  } delivered;
  std::unique_ptr<wal::Outcome> outcome;  // null: the outcome is `delivered`
};

// Entries produced in sequence order. After a failure the lane waits for its retry
// round (ordered lanes hold back their newer entries too, so that a retry never
// reorders a partition; the unordered lane holds back only the failed ones).
struct Lane {
  std::deque<uint64_t> ready;  // sorted, lowest seq first
  std::set<uint64_t> waiting;  // failed, until retry_at_ms
  int64_t retry_at_ms = 0;
  int failures = 0;  // consecutive failed rounds, for the backoff
  // The newest entry handed to the producer from this lane: while the lane has entries
  // in the client, its entries below this one must stay in the window (DrainLoop::Evict).
  uint64_t produced_max = 0;
  bool empty() const { return ready.empty() && waiting.empty(); }
  void Insert(uint64_t seq) {
    if (ready.empty() || seq > ready.back()) {
      ready.push_back(seq);  // the common case: the WAL is read in order
    } else {
      ready.insert(std::lower_bound(ready.begin(), ready.end(), seq), seq);
    }
  }
  void Remove(uint64_t seq) {
    waiting.erase(seq);
    auto it = std::lower_bound(ready.begin(), ready.end(), seq);
    if (it != ready.end() && *it == seq) ready.erase(it);
  }
};

// The hold of a topic's in-doubt entries until their reconciliation (DrainLoop,
// drain_reconcile.cc): a partition's lane waits until that partition is released; the
// topic's unkeyed in-doubt entries until every partition is.
struct ReconcileGate {
  bool holding = false;  // asked for, not all released yet
  int64_t since_ms = 0;  // monotonic, when asked (a later round keeps the first time)
  uint64_t round = 0;    // the request whose results release partitions (0: the start's)
  std::set<int32_t> released;
  bool HoldsPartition(int32_t lane) const { return holding && lane >= 0 && !released.count(lane); }
  bool HoldsTopic() const { return holding; }
};

// A topic's charge on the window: its entries there and their bytes. Only DrainWindow
// (drain_window.h) changes it.
class TopicCharge {
 public:
  uint64_t messages() const { return messages_; }
  uint64_t bytes() const { return bytes_; }

 private:
  friend class DrainWindow;
  uint64_t messages_ = 0;
  uint64_t bytes_ = 0;
};

// Kafka's murmur2 hash of a key (the Java client's Utils.murmur2, as an unsigned value).
uint32_t Murmur2(std::string_view key);
// The ordered lane of a keyed entry: Kafka's default partitioner (murmur2, as the Java
// client and the C client's "murmur2" partitioner), so keyed data lands where other
// producers put it. partition_count > 0.
int32_t KeyPartition(std::string_view key, int partition_count);

// The lane of an entry: its explicit partition, its key's partition, kLaneUnordered
// without a key, kLaneUnrouted while the topic's partitions were never known. A layout
// whose last lookup failed still routes by the partitions it last knew.
int32_t LaneFor(int32_t partition, const std::optional<std::string_view>& key,
                const TopicLayout& layout);

// A lane bound for a partition that exists and has no leader, as last known (also while
// metadata lookups fail: a partition is not taken to have a leader for lack of news).
// Not once the cluster says the topic does not exist: producing then finds that out and
// the entries are discarded after the unknown-topic checks.
inline bool Parked(int32_t lane, const TopicLayout& layout) {
  return lane >= 0 && !absl::IsNotFound(layout.status) && lane < layout.partition_count() &&
         !layout.HasLeader(lane);
}

}  // namespace kspool::agent
