// Helpers shared by the WAL tests.
#pragma once

#include <string>
#include <vector>

#include "wal/wal.h"

namespace kspool::wal {

inline AppendBatch MakeBatch(const std::string& topic, int n, const std::string& prefix) {
  AppendBatch b;
  std::vector<std::string> values;
  for (int i = 0; i < n; ++i) {
    RecordView v;
    v.topic = topic;
    std::string value = prefix + std::to_string(i);
    v.value = value;
    b.Add(v);
  }
  return b;
}

inline std::vector<Entry> ScanAll(Wal* wal, uint64_t from = 0) {
  std::vector<Entry> out;
  absl::Status s = wal->Scan(from, 1u << 30, 1u << 30, &out);
  if (!s.ok()) ADD_FAILURE() << s;
  return out;
}

inline std::vector<Outcome> Delivered(const std::vector<Entry>& entries) {
  std::vector<Outcome> out;
  for (const Entry& e : entries) {
    out.push_back({e.seq, e.record.topic, e.size, "", "", "", e.record.receive_time_ms});
  }
  return out;
}

}  // namespace kspool::wal
