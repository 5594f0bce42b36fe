// AppendBatch: the records of one request, encoded by the caller's thread before the
// group-commit committer takes them, with their per-topic byte counts. Not thread-safe;
// owned by one Append() call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "wal/record.h"

namespace kspool::wal {

class AppendBatch {
 public:
  void Add(const RecordView& r) {
    records_.push_back(EncodeUnsealed(r));
    auto& t = topics_[std::string(r.topic)];
    t.first += 1;
    t.second += records_.back().size();
    bytes_ += records_.back().size();
  }
  size_t size() const { return records_.size(); }
  size_t bytes() const { return bytes_; }
  bool empty() const { return records_.empty(); }

  std::vector<std::string>& records() { return records_; }
  // topic -> (count, bytes)
  const std::map<std::string, std::pair<uint64_t, uint64_t>>& topics() const { return topics_; }

 private:
  std::vector<std::string> records_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> topics_;
  size_t bytes_ = 0;
};

}  // namespace kspool::wal
