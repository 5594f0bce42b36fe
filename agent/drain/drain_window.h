// DrainWindow: the entries the drain holds in memory (issue 42's split of the drain: the
// window, Kafka's RecordAccumulator counterpart). It owns the slots, their pool, and the
// counters over them: entries, bytes, undecodable entries, and each topic's charge
// (TopicCharge, kept in the topic's state but changed only here).
//
// The guarantee it keeps (CheckCounts): bytes() and undecodable() equal a recount of the
// slots, and each topic's charge equals its slots' count and bytes, except between the
// reader's Reserve and the Admit or Unreserve that follows it in the same pass. Every
// change of a counter is made by one of the functions below and asserted there (a
// counter never goes below zero).
//
// Others walk the slots and change what a slot holds (its state, its lane, its outcome),
// never which slots there are: only Admit adds one and only Erase removes one, so an
// iterator stays valid until the next Erase (FindNear checks that in KSPOOL_DCHECKS
// builds).
// Thread safety: none; owned by the drain's loop thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "agent/drain/slot_pool.h"
#include "agent/drain/topic_state.h"
#include "base/check.h"
#include "wal/entry.h"

namespace kspool::agent {

class DrainWindow {
 public:
  // Its nodes come from the pool: lowest address first, so a walk reads forward.
  using Map = std::map<uint64_t, Slot, std::less<uint64_t>,
                       SlotPoolAllocator<std::pair<const uint64_t, Slot>>>;
  using iterator = Map::iterator;
  using const_iterator = Map::const_iterator;

  DrainWindow() = default;
  DrainWindow(const DrainWindow&) = delete;
  DrainWindow& operator=(const DrainWindow&) = delete;

  // The reader charges `topic` for an entry of `size` bytes it is about to take, so that
  // the rest of its pass sees the topic's share used; Admit keeps the charge, Unreserve
  // takes it back.
  static void Reserve(TopicCharge& topic, uint64_t size) {
    topic.messages_ += 1;
    topic.bytes_ += size;
  }
  static void Unreserve(TopicCharge& topic, uint64_t size) {
    KSPOOL_DCHECK(topic.messages_ >= 1 && topic.bytes_ >= size);
    topic.messages_ -= 1;
    topic.bytes_ -= size;
  }

  // Adds a slot for `entry`, charged to `topic` (reserved already, or not). When the
  // window has a slot for its seq already, nothing changes but the reservation taken
  // back, and `*fresh` is false: the slot there is the one being sent. `hint` as for
  // std::map::emplace_hint.
  iterator Admit(iterator hint, wal::Entry&& entry, TopicCharge& topic, bool reserved, bool* fresh);

  // Removes the slot at `it`, charged to `topic` (its slot's topic's charge).
  void Erase(iterator it, TopicCharge& topic);

  // The slot of `seq` (end() if none), looked for at `near` and just after it before the
  // window is searched: lanes are produced and reports arrive mostly in sequence order,
  // and a step is cheaper than a search of ~100k slots. `near` is end() or a slot not
  // erased since it was found (asserted in KSPOOL_DCHECKS builds).
  iterator FindNear(uint64_t seq, iterator near);

  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  uint64_t bytes() const { return bytes_; }
  // Slots whose entry did not decode (status not ok).
  uint64_t undecodable() const { return undecodable_; }
  // Whether the window holds `max_messages` entries or `max_bytes` bytes.
  bool Full(uint64_t max_messages, uint64_t max_bytes) const {
    return slots_.size() >= max_messages || bytes_ >= max_bytes;
  }

  iterator begin() { return slots_.begin(); }
  iterator end() { return slots_.end(); }
  const_iterator begin() const { return slots_.begin(); }
  const_iterator end() const { return slots_.end(); }
  Map::const_reverse_iterator rbegin() const { return slots_.rbegin(); }
  iterator find(uint64_t seq) { return slots_.find(seq); }
  const_iterator find(uint64_t seq) const { return slots_.find(seq); }
  Slot& at(uint64_t seq) { return slots_.at(seq); }
  const Slot& at(uint64_t seq) const { return slots_.at(seq); }
  bool count(uint64_t seq) const { return slots_.count(seq) > 0; }

  // Recounts the slots against the counters and the topics' charges; says what
  // disagrees, or which slot's topic has no state.
  [[nodiscard]] absl::Status CheckCounts(
      const std::map<std::string, TopicState, std::less<>>& topics) const;

 private:
  SlotPool pool_;  // before slots_, which frees its nodes into it
  Map slots_{Map::key_compare(), Map::allocator_type(&pool_)};
  uint64_t bytes_ = 0;
  uint64_t undecodable_ = 0;
  uint64_t erases_ = 0;          // slots erased so far
  uint64_t erases_at_find_ = 0;  // as FindNear last returned
};

// What the window has left during one read pass, and taking an entry into it.
struct Room {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  bool Empty() const { return messages == 0 || bytes == 0; }
  wal::ScanChoice Take(TopicState& ts, size_t size) {
    messages -= std::min<uint64_t>(messages, 1);
    bytes -= std::min<uint64_t>(bytes, size);
    DrainWindow::Reserve(ts.window, size);
    return wal::ScanChoice::kTake;
  }
};

}  // namespace kspool::agent
