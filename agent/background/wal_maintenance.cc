#include "agent/background/wal_maintenance.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/memory_trim.h"

namespace kspool::agent {
namespace {

// One round removes at most this many TrimDeadLetters() calls' worth (each bounded by
// the WAL), so that Stop() is never kept waiting long.
constexpr int kMaxTrimCalls = 16;

}  // namespace

void WalMaintenance::Start() {
  thread_.Start("kspool-walmaint", interval_, [this] { RunOnce(); });
}

void WalMaintenance::Stop() { thread_.Stop(); }

void WalMaintenance::RunOnce() {
  TrimFreedMemory();  // what waiting Sends and Broadcasts held, once they were answered
  RestoreReserve();   // needs no RocksDB, so also while the WAL is failing
  // After a write error the drain loop reopens the WAL; until then there is nothing to do.
  if (!wal_->health().ok()) return;
  TrimDeadLetters();
  TrimDeliveries();
  ForgetIdleTopics();
  const wal::Stats st = wal_->GetStats();
  if (st.report_coarsenings > coarsenings_seen_) {
    spdlog::warn(
        "discard report: the commit point is held back and the after-commit-point "
        "table reached its bound; merged it to {} time buckets: the report's point "
        "may lag the commit point until it passes them",
        st.report_buckets);
    coarsenings_seen_ = st.report_coarsenings;
  }
  if (st.tallies_restarted > tallies_restarted_seen_) {
    spdlog::warn(
        "wal: {} delivery tallies did not parse and started again from 0 (a damaged WAL "
        "meta key): an audit of their partitions starts again at their next heartbeat",
        st.tallies_restarted - tallies_restarted_seen_);
    tallies_restarted_seen_ = st.tallies_restarted;
  }
}

void WalMaintenance::RestoreReserve() {
  const bool made = wal_->RestoreReserve();
  const wal::Stats st = wal_->GetStats();
  if (st.reserve_missing && !reserve_missing_seen_) {
    spdlog::warn(
        "wal: the reserve (KSPOOL_RESERVE in the WAL directory) is missing: the "
        "volume was full (too full to open the WAL with it, or the WAL ran out of "
        "space); Sends are "
        "refused (UNAVAILABLE, no_reserve) so that the space left goes to delivering "
        "what the WAL holds, until the volume has twice the reserve free "
        "(--wal-reserve-bytes)");
  } else if (!st.reserve_missing && (reserve_missing_seen_ || made)) {
    spdlog::warn("wal: the reserve is back ({} bytes): accepting Sends again", st.reserve_bytes);
  }
  reserve_missing_seen_ = st.reserve_missing;
  // Settled entries free their space only once compacted away: while the volume is full,
  // as soon as the drain has settled some (the head moved), not when RocksDB gets to it.
  // The reserve comes back as soon as part of the backlog is compacted away; the rest of
  // the backlog the full volume left is compacted too, as it is delivered, up to the
  // entries written before the reserve came back (after that, RocksDB's own compactions
  // suffice: the volume has room). Without this, up to the reserve's size of delivered
  // entries stayed on the volume until enough new writes triggered a compaction.
  const uint64_t head = st.oldest_seq.value_or(st.next_seq);
  if (st.reserve_missing) {
    reclaim_until_ = std::max(reclaim_until_, st.next_seq);
  }
  const bool reclaiming = st.reserve_missing || compacted_below_ < reclaim_until_;
  if (!reclaiming || head == compacted_below_ || !wal_->health().ok()) return;
  if (absl::Status s = wal_->CompactDeadRange(); !s.ok()) {
    spdlog::warn("wal: compacting the delivered range to free space failed, will retry: {}",
                 s.ToString());
    return;
  }
  compacted_below_ = head;
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
  spdlog::warn(
      "dead letters: removed {} ({} bytes) beyond --dead-letter-max-bytes and {} ({} "
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
      spdlog::warn(
          "delivery index: forgetting outcomes beyond --delivery-retention failed, "
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
  spdlog::info(
      "topics: {} idle topic(s) no longer tracked (first: {}); their counters stay, "
      "their commit points come back with their next message",
      gone->size(), gone->front());
}

}  // namespace kspool::agent
