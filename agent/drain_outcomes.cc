// DrainLoop: what a delivery report does to an entry — settle it as delivered, produce
// it again later, or discard it into the dead letters with a reason.
#include <spdlog/spdlog.h>

#include <random>

#include "agent/drain_loop.h"
#include "agent/kafka_errors.h"

namespace kspool::agent {

void DrainLoop::HandleReports(const std::vector<DeliveryReport>& reports, int64_t now_ms) {
  for (const DeliveryReport& r : reports) {
    auto it = window_.find(r.seq);
    if (it == window_.end() || it->second.state != Slot::kInKafka) continue;
    Slot& slot = it->second;
    if (r.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Finish(r.seq, slot,
             {r.seq, slot.entry.record.topic, slot.entry.size, "", "", "",
              slot.entry.record.receive_time_ms},
             now_ms);
      last_delivery_ms_.store(now_ms);
      queues_[slot.entry.record.topic].failures = 0;
      continue;
    }
    if (options_.metrics) options_.metrics->ProduceError(rd_kafka_err2name(r.err));
    switch (ClassifyDeliveryError(r.err)) {
      case ErrorClass::kPermanent:
        Discard(r.seq, slot, DiscardReason(r.err), r.error);
        break;
      case ErrorClass::kCheckTopic: {
        std::string why;
        if (TargetMissing(slot, now_ms, &why) &&
            ++slot.topic_checks >= static_cast<int>(options_.unknown_topic_checks)) {
          Discard(r.seq, slot, DiscardReason(r.err), r.error + "; " + why);
        } else {
          Retry(r.seq, slot, r.error, now_ms);
        }
        break;
      }
      case ErrorClass::kTransient:
        if (Expired(slot, now_ms)) {
          Discard(r.seq, slot, kReasonExpired, "older than --max-message-age; last error: " + r.error);
        } else {
          Retry(r.seq, slot, r.error, now_ms);
        }
        break;
    }
  }
}

void DrainLoop::Finish(uint64_t seq, Slot& slot, wal::Outcome outcome, int64_t now_ms) {
  slot.state = Slot::kSettling;
  slot.outcome = std::move(outcome);
  slot.finished_ms = now_ms;
  finished_.push_back(seq);
}

void DrainLoop::Retry(uint64_t seq, Slot& slot, const std::string& error, int64_t now_ms) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  TopicQueue& q = queues_[slot.entry.record.topic];
  if (q.waiting.empty() || now_ms >= q.retry_at_ms) {
    // A new failed round for this topic: back off exponentially, with jitter. Failures
    // that arrive while a round waits join it, so they go out together, in order.
    uint64_t backoff = options_.retry_backoff_ms;
    for (int i = 0; i < q.failures && backoff < options_.retry_backoff_max_ms; ++i) backoff *= 2;
    backoff = std::min(backoff, options_.retry_backoff_max_ms);
    backoff = backoff / 2 + std::uniform_int_distribution<uint64_t>(0, backoff / 2)(rng);
    q.retry_at_ms = std::max(q.retry_at_ms, now_ms + static_cast<int64_t>(backoff));
    ++q.failures;
  }
  q.waiting.insert(seq);
  slot.state = Slot::kBackoff;
  if (slot.attempts <= 1 || slot.attempts % 10 == 0) {
    spdlog::warn("kafka: delivery of seq {} to {} failed (attempt {}): {}; retrying in {} ms", seq,
                 slot.entry.record.topic, slot.attempts, error, q.retry_at_ms - now_ms);
  }
}

void DrainLoop::Discard(uint64_t seq, Slot& slot, const std::string& reason,
                        const std::string& error) {
  const bool decoded = slot.entry.status.ok();
  const std::string topic =
      decoded ? slot.entry.record.topic : wal::SalvageTopic(slot.entry.raw);
  spdlog::warn("drain: discarding seq {} (topic '{}') as {}: {}; kept in the dead letters", seq,
               topic, reason, error);
  Finish(seq, slot,
         {seq, topic, slot.entry.size, reason, error,
          decoded ? wal::EncodeRecord(slot.entry.record) : slot.entry.raw,
          decoded ? slot.entry.record.receive_time_ms : 0},
         options_.clock->NowMillis());
  discarded_.fetch_add(1);
}

bool DrainLoop::Expired(const Slot& slot, int64_t now_ms) const {
  return options_.max_message_age_ms > 0 && slot.entry.status.ok() &&
         now_ms - slot.entry.record.receive_time_ms >
             static_cast<int64_t>(options_.max_message_age_ms);
}

bool DrainLoop::TargetMissing(const Slot& slot, int64_t now_ms, std::string* why) {
  const std::string& topic = slot.entry.record.topic;
  TopicCheck& check = topic_checks_[topic];
  // One fresh look per topic and backoff period serves every entry that failed in it.
  if (check.at_ms == 0 || now_ms - check.at_ms >= static_cast<int64_t>(options_.retry_backoff_ms)) {
    check.partitions = producer_->PartitionCount(topic, 5000);
    check.at_ms = now_ms;
  }
  if (absl::IsNotFound(check.partitions.status())) {
    *why = "the cluster says topic " + topic + " does not exist";
    return true;
  }
  const int32_t p = slot.entry.record.partition;
  if (check.partitions.ok() && p >= *check.partitions) {
    *why = "topic " + topic + " has " + std::to_string(*check.partitions) + " partitions, not " +
           std::to_string(p + 1);
    return true;
  }
  return false;
}

}  // namespace kspool::agent
