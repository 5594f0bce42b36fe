// What became of an entry: the outcome the drain settles it with (Outcome), and the
// answer of the delivery index about one sequence number (Delivery). Plain values, owned
// by whoever holds them.
#pragma once

#include <cstdint>
#include <string>

namespace kspool::wal {

// What happened to one entry, for Settle().
struct Outcome {
  uint64_t seq = 0;
  std::string topic;
  size_t size = 0;
  // Empty: delivered. Otherwise the discard reason (e.g. "msg_size_too_large").
  std::string discard_reason;
  std::string error_text;
  // The stored record, kept in the dead-letter store on discard. If it does not decode,
  // `topic` is only a guess: Settle charges the discard to the topic whose ledger owns
  // the entry (FORMAT.md, corrupt records).
  std::string raw;
  int64_t receive_time_ms = 0;  // 0: unknown (an undecodable record)
  // Delivered: where Kafka put it (from the delivery report).
  int32_t partition = -1;
  int64_t offset = -1;
  // When the outcome was known, wall clock ms; 0: Settle() uses its clock's time.
  int64_t time_ms = 0;
};

// What became of one sequence number (LookupDeliveries, ScanDeliveries).
struct Delivery {
  enum class State {
    kUnknown,    // not kept (below the index's floor), not assigned yet, or never an entry
    kPending,    // live in the log
    kDelivered,  // settled as delivered: topic, partition, offset
    kDiscarded,  // settled as discarded: reason and error (a dead letter)
  };
  uint64_t seq = 0;
  State state = State::kUnknown;
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
  int64_t time_ms = 0;  // when the outcome was known
  std::string discard_reason;
  std::string error;  // discard: Kafka's text; unknown: why it is not known
};

}  // namespace kspool::wal
