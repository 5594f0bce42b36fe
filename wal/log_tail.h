// LogTail: where a WAL's log ends and the clock of its appends: the sequence numbers
// handed out and committed, the receive times (never going backwards, never below the
// floor that published commit points set), and the append counters. A component of
// RocksWal: the group commit (rocks_wal_append.cc) and the dead-letter replay take
// numbers and times from it, Open/Reopen load it.
//
// Invariants: committed_next() <= next_seq(); every seq below committed_next() is
// written or failed; receive times handed out are >= every earlier one and >= the floor.
// Thread safety: none of its own; RocksWal holds it under its mu_.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace kspool::wal {

class LogTail {
 public:
  uint64_t next_seq() const { return next_seq_; }              // next to assign
  uint64_t committed_next() const { return committed_next_; }  // every seq below is done
  int64_t last_receive_ms() const { return last_receive_ms_; }
  int64_t receive_floor_ms() const { return receive_floor_ms_; }
  // The receive time of the group being written, if one is.
  const std::optional<int64_t>& writing_receive_ms() const { return writing_receive_ms_; }

  // At Open/Reopen: the log ends before `next_seq`, its last append was at `last_receive_ms`.
  void Load(uint64_t next_seq, int64_t last_receive_ms) {
    next_seq_ = committed_next_ = next_seq;
    last_receive_ms_ = last_receive_ms;
  }
  // The next receive time: the clock's `now_ms`, but never below the last one or the floor.
  int64_t NextReceiveTime(int64_t now_ms) {
    last_receive_ms_ = std::max({now_ms, last_receive_ms_, receive_floor_ms_});
    return last_receive_ms_;
  }
  // The clock's `now_ms`, never behind the last receive time.
  int64_t Now(int64_t now_ms) const { return std::max(now_ms, last_receive_ms_); }
  // Future receive times are >= `ms` (never lowered).
  void RaiseFloor(int64_t ms) { receive_floor_ms_ = std::max(receive_floor_ms_, ms); }

  // A group of `n` entries takes [Take(n), next_seq()); it is written at `receive_ms`
  // until Committed().
  uint64_t Take(uint64_t n) {
    const uint64_t first = next_seq_;
    next_seq_ += n;
    return first;
  }
  void Writing(int64_t receive_ms) { writing_receive_ms_ = receive_ms; }
  // The group ending before `end` is written or failed.
  void Committed(uint64_t end) {
    writing_receive_ms_.reset();
    committed_next_ = end;
  }
  // Entries up to `end` written outside a group commit, while none is in flight (the
  // dead-letter replay).
  void WrittenUpTo(uint64_t end) { next_seq_ = committed_next_ = end; }
  // A group written successfully: `requests` appends of `messages` entries.
  void CountGroup(uint64_t requests, uint64_t messages) {
    ++group_commits_;
    appends_ += requests;
    appended_messages_ += messages;
  }

  uint64_t group_commits() const { return group_commits_; }
  uint64_t appends() const { return appends_; }
  uint64_t appended_messages() const { return appended_messages_; }

 private:
  uint64_t next_seq_ = 1;
  uint64_t committed_next_ = 1;
  int64_t last_receive_ms_ = 0;
  int64_t receive_floor_ms_ = 0;
  std::optional<int64_t> writing_receive_ms_;
  uint64_t group_commits_ = 0;
  uint64_t appends_ = 0;
  uint64_t appended_messages_ = 0;
};

}  // namespace kspool::wal
