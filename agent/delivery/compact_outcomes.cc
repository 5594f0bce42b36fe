#include "agent/delivery/compact_outcomes.h"

#include <utility>

namespace kspool::agent {

void CompactOutcomes::Reset(size_t n) {
  slots_.assign(n, Slot{});
  slots_.shrink_to_fit();
  topic_index_.clear();
  topics_.clear();
  details_.clear();
  last_topic_ = 0;
  bytes_ = n * kSlotBytes;
}

uint32_t CompactOutcomes::TopicIndex(const std::string& topic) {
  constexpr size_t kScanned = 8;  // beyond this many topics, a hash map finds them
  if (last_topic_ < topics_.size() && topics_[last_topic_] == topic) return last_topic_;
  if (topics_.size() <= kScanned) {
    for (size_t i = 0; i < topics_.size(); ++i) {
      if (topics_[i] == topic) return static_cast<uint32_t>(last_topic_ = i);
    }
  } else if (auto it = topic_index_.find(topic); it != topic_index_.end()) {
    return static_cast<uint32_t>(last_topic_ = it->second);
  }
  topics_.push_back(topic);
  bytes_ += kStringBytes + topic.size();
  last_topic_ = topics_.size() - 1;
  if (topics_.size() > kScanned) {
    if (topic_index_.empty()) {
      for (size_t i = 0; i < topics_.size(); ++i) topic_index_.emplace(topics_[i], i);
    } else {
      topic_index_.emplace(topics_.back(), static_cast<uint32_t>(last_topic_));
    }
  }
  return static_cast<uint32_t>(last_topic_);
}

int32_t CompactOutcomes::DetailIndex(const std::string& reason, const std::string& error) {
  // Newest first: a run of discards usually shares its reason and error.
  for (size_t i = details_.size(); i-- > 0;) {
    if (details_[i].reason == reason && details_[i].error == error) return static_cast<int32_t>(i);
  }
  details_.push_back(Detail{reason, error});
  bytes_ += 2 * kStringBytes + reason.size() + error.size();
  return static_cast<int32_t>(details_.size() - 1);
}

bool CompactOutcomes::Set(size_t i, const wal::Outcome& o) {
  Slot& s = slots_[i];
  if (StateOf(s) != wal::Outcome::State::kUnknown) return false;
  s.offset = o.offset;
  s.time_ms = o.time_ms;
  s.partition_or_detail =
      o.state == wal::Outcome::State::kDiscarded ? DetailIndex(o.discard_reason, o.error) : o.partition;
  s.topic_and_state = TopicIndex(o.topic) | (static_cast<uint32_t>(o.state) << 30);
  return true;
}

std::vector<wal::Outcome> CompactOutcomes::Expand(uint64_t first_seq) {
  std::vector<wal::Outcome> out(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    wal::Outcome& o = out[i];
    o.seq = first_seq + i;
    o.state = StateOf(s);
    if (o.state == wal::Outcome::State::kUnknown) continue;  // no outcome
    o.topic = topics_[s.topic_and_state & ((1u << 30) - 1)];
    o.offset = s.offset;
    o.time_ms = s.time_ms;
    if (o.state == wal::Outcome::State::kDiscarded) {
      const Detail& d = details_[static_cast<size_t>(s.partition_or_detail)];
      o.discard_reason = d.reason;
      o.error = d.error;
    } else {
      o.partition = s.partition_or_detail;
    }
  }
  Reset(0);
  return out;
}

}  // namespace kspool::agent
