#include "agent/background/wal_maintenance.h"

#include <spdlog/spdlog.h>

#include "base/memory_trim.h"

namespace kspool::agent {
namespace {

// One round removes at most this many TrimDeadLetters() calls' worth (each bounded by
// the WAL), so that Stop() is never kept waiting long.
constexpr int kMaxTrimCalls = 16;

}  // namespace

void WalMaintenance::Start() { thread_.Start("kspool-walmaint", interval_, [this] { RunOnce(); }); }

void WalMaintenance::Stop() { thread_.Stop(); }

void WalMaintenance::RunOnce() {
  TrimFreedMemory();  // what waiting Sends and Broadcasts held, once they were answered
  // After a write error the drain loop reopens the WAL; until then there is nothing to do.
  if (!wal_->health().ok()) return;
  TrimDeadLetters();
  TrimDeliveries();
  ForgetIdleTopics();
  const wal::Stats st = wal_->GetStats();
  if (st.report_coarsenings > coarsenings_seen_) {
    spdlog::warn("discard report: the commit point is held back and the after-commit-point "
                 "table reached its bound; merged it to {} time buckets: the report's point "
                 "may lag the commit point until it passes them",
                 st.report_buckets);
    coarsenings_seen_ = st.report_coarsenings;
  }
}

void WalMaintenance::TrimDeadLetters() {
  wal::DeadLetterTrim total;
  for (int i = 0; i < kMaxTrimCalls; ++i) {
    absl::StatusOr<wal::DeadLetterTrim> t = wal_->TrimDeadLetters();
    if (!t.ok()) {
      spdlog::warn("dead letters: removing those beyond their limits failed, will retry: {}",
                   t.status().ToString());
      Degraded("dead_letter_trim_failed");
      break;
    }
    total.by_size.count += t->by_size.count;
    total.by_size.bytes += t->by_size.bytes;
    total.by_age.count += t->by_age.count;
    total.by_age.bytes += t->by_age.bytes;
    if (!t->more) break;
  }
  if (total.by_size.count + total.by_age.count == 0) return;
  spdlog::warn("dead letters: removed {} ({} bytes) beyond --dead-letter-max-bytes and {} ({} "
               "bytes) older than --dead-letter-max-age, oldest first; they stay counted as "
               "discarded (kspool_dead_letters_dropped_total)",
               total.by_size.count, total.by_size.bytes, total.by_age.count, total.by_age.bytes);
}

void WalMaintenance::TrimDeliveries() {
  // Forgetting outcomes beyond the retention is the index working as configured, not a
  // degraded mode: kspool_delivery_oldest_sequence shows where it stands.
  for (int i = 0; i < kMaxTrimCalls; ++i) {
    absl::StatusOr<wal::DeliveryTrim> t = wal_->TrimDeliveries();
    if (!t.ok()) {
      spdlog::warn("delivery index: forgetting outcomes beyond --delivery-retention failed, "
                   "will retry: {}",
                   t.status().ToString());
      Degraded("delivery_trim_failed");
      return;
    }
    if (!t->more) return;
  }
}

void WalMaintenance::ForgetIdleTopics() {
  absl::StatusOr<std::vector<std::string>> gone = wal_->ForgetIdleTopics();
  if (!gone.ok()) {
    spdlog::warn("topics: forgetting idle topics failed, will retry: {}", gone.status().ToString());
    Degraded("forget_topics_failed");
    return;
  }
  if (gone->empty()) return;
  spdlog::info("topics: {} idle topic(s) no longer tracked (first: {}); their counters stay, "
               "their commit points come back with their next message",
               gone->size(), gone->front());
}

}  // namespace kspool::agent
