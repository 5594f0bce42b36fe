// Helpers shared by the WAL tests.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "wal/wal.h"

namespace kspool::wal {

inline constexpr int64_t kHour = 3'600'000;  // ms, for the injected clock

// Debian's librocksdb.a is not built with ThreadSanitizer: TSan cannot see the atomics
// RocksDB synchronizes with and reports races inside RocksDB (write-group handover between
// concurrent DB::Write calls, memtable inserts, background purges against foreground
// reads). Long concurrent tests are skipped under TSan for that reason.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

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

// accepted = delivered + discarded + live for every topic, with live found by scanning
// the log (not derived from the counters).
inline void ExpectLedgerHolds(Wal* wal, const std::string& step) {
  std::map<std::string, Counts> live;
  absl::Status s = wal->CountLive(&live);
  if (!s.ok()) ADD_FAILURE() << step << ": " << s;
  for (const auto& [topic, t] : wal->GetStats().topics) {
    Counts settled = t.delivered;
    for (const auto& [reason, c] : t.discarded) {
      settled.count += c.count;
      settled.bytes += c.bytes;
    }
    EXPECT_EQ(t.accepted.count, settled.count + live[topic].count) << step << ", topic " << topic;
    EXPECT_EQ(t.accepted.bytes, settled.bytes + live[topic].bytes) << step << ", topic " << topic;
    EXPECT_EQ(t.pending().count, live[topic].count) << step << ", topic " << topic;
  }
}

// Whether the WAL tracks `topic` (Wal::TrackedTopics).
inline bool Tracks(Wal* wal, const std::string& topic) {
  std::vector<std::string> t = wal->TrackedTopics();
  return std::find(t.begin(), t.end(), topic) != t.end();
}

// Outcomes for Settle() as the drain makes them: with the entry's size and receive time
// (and a discard's record).
inline Outcome SettleDelivered(uint64_t seq, std::string topic, size_t size,
                               int64_t receive_time_ms = 0) {
  Outcome o = Outcome::Delivered(seq, std::move(topic), -1, -1);
  o.size = size;
  o.receive_time_ms = receive_time_ms;
  return o;
}
inline Outcome SettleDiscarded(uint64_t seq, std::string topic, size_t size, std::string reason,
                               std::string error, std::string raw, int64_t receive_time_ms = 0) {
  Outcome o = Outcome::Discarded(seq, std::move(topic), std::move(reason), std::move(error));
  o.raw = std::move(raw);
  o.size = size;
  o.receive_time_ms = receive_time_ms;
  return o;
}

inline std::vector<Outcome> Delivered(const std::vector<Entry>& entries) {
  std::vector<Outcome> out;
  for (const Entry& e : entries) {
    out.push_back(SettleDelivered(e.seq, e.record.topic, e.size, e.record.receive_time_ms));
  }
  return out;
}

}  // namespace kspool::wal
