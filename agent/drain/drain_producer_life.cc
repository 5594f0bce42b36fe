// DrainLoop: the producer's life — its replacement after a fatal error (what it held
// goes back to the lanes; what was on the wire becomes a suspect, reconciled before it
// goes again), and the last deliveries at shutdown.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/drain/drain_loop.h"

namespace kspool::agent {

void DrainLoop::ReplaceProducerIfFatal(int64_t now) {
  if (!producer_) {
    if (!producer_.ReplacementDue(now)) return;
    if (absl::Status s = producer_.Replace(); !s.ok()) {
      spdlog::error("kafka: cannot create a new producer: {}", s.ToString());
      Degraded("producer_create_failed");
    } else {
      spdlog::warn("kafka: a new producer is in place; producing again");
      return;
    }
  } else {
    std::string fatal = producer_->FatalError();
    if (fatal.empty()) return;
    spdlog::error("kafka: replacing the producer after a fatal error: {}", fatal);
    Degraded("producer_replaced");
    producer_->PurgeAll();
    std::vector<DeliveryReport> reports;
    producer_->Poll(0, &reports);
    HandleReports(reports, now);  // purged entries go back to their lanes
    for (auto& [seq, slot] : window_) {
      if (slot.state != Slot::kInKafka) continue;
      // No report is coming, and Kafka may hold it: reconciled before it goes again.
      Suspect(seq, slot, "in flight when the producer was replaced");
      Requeue(seq, slot);
    }
    AskRoundsDue();
    SettleFinished(now, /*all=*/true);  // its partitions' watermarks held by the new round
  }
  // Exponential backoff: a producer that dies again at once is never replaced in a
  // tight loop.
  producer_.Drop(now);
}

void DrainLoop::RecycleProducerIfQuiet(int64_t now) {
  if (!producer_ || options_.producer_max_topics == 0) return;
  const size_t known = producer_->KnownTopics();
  if (known <= options_.producer_max_topics) return;
  if (!producer_.RecycleAllowed(now, options_.producer_recycle_min_ms)) return;
  // Quiet: the client holds no message and owes no report, so nothing can be in Kafka
  // unreported and nothing needs reconciling; every slot of the window is ready to be
  // produced again by the new producer as by the old.
  if (producer_->OutstandingMessages() > 0) return;
  for (const auto& [seq, slot] : window_) {
    if (slot.state == Slot::kInKafka) return;
  }
  if (absl::Status s = producer_.Recycle(now); !s.ok()) {  // not retried at once either
    spdlog::warn(
        "kafka: cannot make a new producer to give back the one holding {} topic "
        "names; keeping it: {}",
        known, s.ToString());
    Degraded("producer_recycle_failed");
    return;
  }
  spdlog::info(
      "kafka: replaced the producer at a quiet moment: it held {} topic names "
      "(more than {}); what it kept for them is given back",
      known, options_.producer_max_topics);
}

void DrainLoop::DrainForShutdown() {
  if (!producer_) return;
  const int64_t deadline =
      options_.clock->MonotonicMillis() + static_cast<int64_t>(options_.shutdown_grace_ms);
  std::vector<DeliveryReport> reports;
  auto handle = [&] {
    for (DeliveryReport& r : reports) {
      if (r.result != DeliveryResult::kDelivered) r.seq = 0;  // no retries now; nothing discarded
    }
    HandleReports(reports, options_.clock->MonotonicMillis());
    SettleFinished(options_.clock->MonotonicMillis(), /*all=*/true);
  };
  while (producer_->OutstandingMessages() > 0 && options_.clock->MonotonicMillis() < deadline) {
    if (producer_->NoBrokerUp()) {
      // Waiting out the grace would only delay the stop: nothing can be acknowledged.
      spdlog::warn(
          "drain: no Kafka broker is up; not waiting for {} messages in flight "
          "(they stay in the WAL and are produced again at the next start)",
          producer_->OutstandingMessages());
      Degraded("shutdown_without_brokers");
      break;
    }
    reports.clear();
    producer_->Poll(50, &reports);
    handle();
  }
  // Whatever Kafka has not acknowledged stays in the WAL for the next start.
  producer_->PurgeAll();
  reports.clear();
  producer_->Poll(0, &reports);
  handle();
  UpdateCommitPoint();
  producer_.Reset();
  spdlog::info("drain: stopped; {} entries in flight stay in the WAL", window_.size());
}

}  // namespace kspool::agent
