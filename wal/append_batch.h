// AppendBatch: the messages of one request, encoded by the caller's thread before the
// group-commit committer takes them, with their per-topic counts and accounted bytes.
// Consecutive messages of one topic share one batch record (FORMAT.md, "Batch records"):
// a request of 100 messages to one topic is one key in the log. A record stops growing
// at about kBatchRecordTargetBytes, so a reader that needs one of its messages never
// reads much more than that (a larger message is a record of its own). Not thread-safe; owned
// by one Append() call.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wal/record.h"

namespace kspool::wal {

class AppendBatch {
 public:
  // A batch record, unsealed (SealRecord() stamps it), and how many messages it holds.
  struct Unsealed {
    std::string bytes;
    uint32_t count = 0;
  };

  void Add(const RecordView& r) {
    if (building_ && (building_->topic() != r.topic || building_->count() == kMaxBatchMessages ||
                      building_->body_bytes() + r.value.size() > kBatchRecordTargetBytes)) {
      Close();
    }
    if (!building_) building_.emplace(r.topic);
    building_->Add(r);
    const size_t size = building_->MessageSize(building_->count() - 1);
    auto& t = topics_[std::string(r.topic)];
    t.first += 1;
    t.second += size;
    bytes_ += size;
    messages_ += 1;
  }
  // Encodes the record still being built; appenders call it before queueing the batch,
  // so the encoding stays on their threads. Later Add()s start a new record.
  void Finish() { Close(); }

  size_t size() const { return messages_; }
  // The messages' accounted bytes: what their version-1 records would take (record.h).
  size_t bytes() const { return bytes_; }
  bool empty() const { return messages_ == 0; }

  // The records, in order; their counts add up to size(). Finish() must have run.
  std::vector<Unsealed>& records() { return records_; }
  // topic -> (count, bytes)
  const std::map<std::string, std::pair<uint64_t, uint64_t>>& topics() const { return topics_; }

 private:
  void Close() {
    if (!building_) return;
    records_.push_back({building_->Finish(), building_->count()});
    building_.reset();
  }

  std::optional<BatchRecordBuilder> building_;
  std::vector<Unsealed> records_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> topics_;
  size_t bytes_ = 0;
  size_t messages_ = 0;
};

}  // namespace kspool::wal
