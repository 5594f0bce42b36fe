// CommitLease: which commit points the lease covers, and what an append must persist.
#include "wal/commit_lease.h"

#include <algorithm>

#include "wal/keys.h"

namespace kspool::wal {

CommitPoints MaxOf(const CommitPoints& a, const CommitPoints& b) {
  CommitPoints m = a;
  m.global_ms = std::max(a.global_ms, b.global_ms);
  for (const auto& [topic, ms] : b.topics_ms) {
    auto [it, fresh] = m.topics_ms.try_emplace(topic, ms);
    if (!fresh) it->second = std::max(it->second, ms);
  }
  return m;
}

int64_t HighestPoint(const CommitPoints& p) {
  int64_t h = p.global_ms;
  for (const auto& [topic, ms] : p.topics_ms) h = std::max(h, ms);
  return h;
}

bool CommitLease::Covers(const CommitPoints& next,
                         const std::map<std::string, TopicStats>& ledger) const {
  if (next.global_ms > saved_.global_ms) {
    if (next.global_ms > ceiling_ms_) return false;
    for (const auto& [topic, t] : ledger) {
      if (t.pending().count != 0) return false;
    }
  }
  for (const auto& [topic, ms] : next.topics_ms) {
    auto saved = saved_.topics_ms.find(topic);
    if (saved != saved_.topics_ms.end() && ms <= saved->second) continue;
    if (ms > ceiling_ms_) return false;
    if (!durable_.topics_ms.count(topic)) return false;  // its first point
    auto t = ledger.find(topic);
    if (t != ledger.end() && t->second.pending().count != 0) return false;
  }
  return true;
}

void CommitLease::Written(const CommitPoints& points, int64_t ceiling_ms) {
  saved_ = MaxOf(saved_, points);
  NoteDurable(points);
  ceiling_ms_ = ceiling_ms;
}

CommitPoints CommitLease::LeasedFor(const std::map<std::string, Counts>& topics) const {
  CommitPoints leased;
  if (saved_.global_ms > durable_.global_ms) leased.global_ms = saved_.global_ms;
  for (const auto& [topic, c] : topics) {
    auto saved = saved_.topics_ms.find(topic);
    if (saved == saved_.topics_ms.end()) continue;
    auto durable = durable_.topics_ms.find(topic);
    if (durable == durable_.topics_ms.end() || saved->second > durable->second) {
      leased.topics_ms[topic] = saved->second;
    }
  }
  return leased;
}

void CommitLease::PlanFirstPoints(const std::map<std::string, Counts>& topics,
                                  int64_t receive_ms,
                                  const std::map<std::string, TopicStats>& ledger,
                                  CommitPoints* leased) const {
  // Valid: such a topic has nothing live (new, or forgotten when it had none), and this
  // append's messages are received at receive_ms.
  for (const auto& [topic, c] : topics) {
    if (saved_.topics_ms.count(topic)) continue;
    auto t = ledger.find(topic);
    if (t != ledger.end() && t->second.pending().count != 0) continue;
    leased->topics_ms[topic] = receive_ms - 1;
  }
}

void CommitLease::PutLeased(const CommitPoints& leased, rocksdb::ColumnFamilyHandle* meta,
                            rocksdb::WriteBatch* wb) {
  if (leased.global_ms != 0) {
    wb->Put(meta, keys::kLeasedPoint, keys::U64(static_cast<uint64_t>(leased.global_ms)));
  }
  for (const auto& [topic, ms] : leased.topics_ms) {
    wb->Put(meta, keys::TopicLeasedPoint(topic), keys::U64(static_cast<uint64_t>(ms)));
  }
}

void CommitLease::Open(const CommitPoints& points, int64_t ceiling_ms,
                       const std::map<std::string, TopicStats>& ledger) {
  ceiling_ms_ = ceiling_ms;
  saved_ = points;
  if (ceiling_ms == 0) return;  // a clean close: every published point is durable
  bool wal_empty = true;
  for (const auto& [topic, t] : ledger) {
    if (t.pending().count != 0) wal_empty = false;
  }
  // Only topics with a durable point had one published (a first point is never leased).
  for (auto& [topic, ms] : saved_.topics_ms) {
    auto t = ledger.find(topic);
    if (t == ledger.end() || t->second.pending().count == 0) ms = std::max(ms, ceiling_ms);
  }
  if (wal_empty) saved_.global_ms = std::max(saved_.global_ms, ceiling_ms);
}

void CommitLease::Reopen(const CommitPoints& points, int64_t ceiling_ms) {
  saved_ = MaxOf(saved_, points);
  ceiling_ms_ = std::max(ceiling_ms_, ceiling_ms);
}

void CommitLease::Forget(const std::string& topic) {
  saved_.topics_ms.erase(topic);
  durable_.topics_ms.erase(topic);
}

}  // namespace kspool::wal
