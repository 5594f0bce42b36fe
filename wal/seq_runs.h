// SeqRuns: a set of sequence numbers kept as runs of consecutive numbers, [first, end).
// Settle() remembers the entries it removed above the head this way: while the head is
// held back by one stuck entry, the entries settled above it form a few long runs (as
// many as the live entries between them, plus one), not one element per message.
// Internal to wal/. Not thread-safe; the owner's lock guards it.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

namespace kspool::wal {

class SeqRuns {
 public:
  void Add(uint64_t seq) {
    auto next = runs_.upper_bound(seq);  // the first run starting after seq
    if (next != runs_.begin()) {
      auto prev = std::prev(next);
      if (seq < prev->second) return;  // already in
      if (seq == prev->second) {
        prev->second = seq + 1;
        if (next != runs_.end() && next->first == seq + 1) {
          prev->second = next->second;
          runs_.erase(next);
        }
        return;
      }
    }
    if (next != runs_.end() && next->first == seq + 1) {
      const uint64_t end = next->second;
      runs_.erase(next);
      runs_.emplace(seq, end);
      return;
    }
    runs_.emplace(seq, seq + 1);
  }
  // The end of the run that holds `seq`, or `seq` itself when it is not in the set.
  uint64_t RunEnd(uint64_t seq) const {
    auto next = runs_.upper_bound(seq);
    if (next == runs_.begin()) return seq;
    auto prev = std::prev(next);
    return seq < prev->second ? prev->second : seq;
  }
  bool Contains(uint64_t seq) const { return RunEnd(seq) > seq; }
  // Forgets every number below `seq`.
  void EraseBelow(uint64_t seq) {
    auto it = runs_.begin();
    while (it != runs_.end() && it->second <= seq) it = runs_.erase(it);
    if (it != runs_.end() && it->first < seq) {
      const uint64_t end = it->second;
      runs_.erase(it);
      runs_.emplace(seq, end);
    }
  }
  void clear() { runs_.clear(); }
  size_t runs() const { return runs_.size(); }

 private:
  std::map<uint64_t, uint64_t> runs_;  // first -> end (exclusive)
};

}  // namespace kspool::wal
