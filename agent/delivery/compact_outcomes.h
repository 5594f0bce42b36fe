// CompactOutcomes: the outcomes a waiting WAIT_FOR_KAFKA Send has collected so far, one
// slot per message, in kSlotBytes each. A full wal::Outcome is about 180 bytes (seven
// strings and the Settle() inputs) and most of it is empty while a Send waits: so a slot
// keeps the state, partition, offset and time, and indexes of the topic and of the
// discard's (reason, error) in tables of the distinct ones, which a request has few of.
// Expand() rebuilds the wal::Outcome values once, when the Send is answered.
//
// Memory: bytes() is what it holds (slots, tables), as charged by the caller;
// EstimateBytes() is its bound for a request known before the append (the tables of
// discards grow only with distinct error texts, counted in bytes() when they come).
// Not thread-safe: owned by one waiter, under DeliveryWaiters' lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wal/outcome.h"

namespace kspool::agent {

class CompactOutcomes {
 public:
  // Bytes per message (slot) and per distinct string in the tables (besides its text).
  static constexpr size_t kSlotBytes = 24;
  // A string object; a topic's also covers its hash-map entry (node and bucket).
  static constexpr size_t kStringBytes = 96;

  // The bytes held for `n` messages whose distinct topics' names have `topic_bytes` in
  // all over `topics` names, before any discard.
  static size_t EstimateBytes(size_t n, size_t topics, size_t topic_bytes) {
    return n * kSlotBytes + topics * kStringBytes + topic_bytes;
  }

  // `n` empty slots (no outcome yet).
  void Reset(size_t n);
  size_t size() const { return slots_.size(); }
  // Sets slot `i` from `o` unless it already has an outcome (the first one stands); true
  // when it was empty. The drain hands on only delivered and discarded outcomes; one of
  // state kUnknown would leave the slot empty (as a wal::Outcome slot did).
  bool Set(size_t i, const wal::Outcome& o);
  bool has(size_t i) const { return StateOf(slots_[i]) != wal::Outcome::State::kUnknown; }
  // The outcomes, slot i as sequence `first_seq + i`; empties this.
  std::vector<wal::Outcome> Expand(uint64_t first_seq);
  size_t bytes() const { return bytes_; }

 private:
  struct Slot {
    int64_t offset = -1;
    int64_t time_ms = 0;
    // Delivered: the partition; discarded: the index into details_.
    int32_t partition_or_detail = -1;
    // The index into topics_ (low 30 bits) and the state (high 2 bits).
    uint32_t topic_and_state = 0;
  };
  static_assert(sizeof(Slot) == kSlotBytes);
  struct Detail {
    std::string reason;
    std::string error;
  };

  static wal::Outcome::State StateOf(const Slot& s) {
    return static_cast<wal::Outcome::State>(s.topic_and_state >> 30);
  }
  uint32_t TopicIndex(const std::string& topic);
  int32_t DetailIndex(const std::string& reason, const std::string& error);

  std::vector<Slot> slots_;
  std::deque<std::string> topics_;  // distinct, in the order first seen (stable addresses)
  // Their indexes, once there are more than a few: a request may name thousands.
  std::unordered_map<std::string_view, uint32_t> topic_index_;
  std::deque<Detail> details_;      // distinct (reason, error) of discards
  size_t last_topic_ = 0;           // a request's outcomes come mostly for one topic
  size_t bytes_ = 0;
};

}  // namespace kspool::agent
