// DrainLoop: what a delivery report does to an entry — settle it as delivered, produce
// it again later, or discard it into the dead letters with a reason.
#include <spdlog/spdlog.h>

#include <random>

#include "agent/drain/drain_loop.h"
#include "agent/drain/discard_reasons.h"

namespace kspool::agent {

void DrainLoop::HandleReports(const std::vector<DeliveryReport>& reports, int64_t now) {
  if (reports.empty()) return;
  // When the outcomes became known, for the delivery index: one wall-clock read per poll.
  const int64_t wall_ms = options_.clock->NowMillis();
  // Nothing below erases a slot (only the settle and Forget do), so `last` stays valid;
  // nor a topic (topics_ is a std::map), so `last_ts` does: reports come in runs of one
  // topic, which is looked up once per run.
  Window::iterator last = window_.end();
  TopicState* last_ts = nullptr;
  for (const DeliveryReport& r : reports) {
    auto it = window_.FindNear(r.seq, last);
    if (it == window_.end() || it->second.state != Slot::kInKafka) continue;
    Slot& slot = it->second;
    if (!last_ts || last->second.entry.record.topic != slot.entry.record.topic) {
      last_ts = &topics_[slot.entry.record.topic];
    }
    last = it;
    TopicState& ts = *last_ts;
    if (r.possibly_persisted && r.result != DeliveryResult::kDelivered) {
      Suspect(r.seq, slot, "reported failed, possibly persisted");
    }
    if (r.result == DeliveryResult::kPurged) {
      // Taken back before it was sent (a leaderless partition, or a new producer).
      --slot.attempts;
      Requeue(r.seq, slot);
      continue;
    }
    if (slot.alone) ts.lanes.alone.erase(slot.produced_to);
    auto k = ts.lanes.in_kafka.find(slot.produced_to);
    if (k != ts.lanes.in_kafka.end() && k->second > 0) --k->second;
    if (r.result == DeliveryResult::kDelivered) {
      // Kept as its numbers, without building an Outcome (Settler::Store's compact form).
      Settler::KeepDelivered(slot, r.partition, r.offset, wall_ms, /*raises_watermark=*/true);
      MarkFinished(r.seq, slot, now);
      last_delivery_ms_.store(now);
      ts.pace.last_delivery_ms = now;
      producer_.Delivered();
      ts.lanes.Of(slot.lane).failures = 0;
      if (!ts.producer.lags.empty()) ts.producer.lags.erase(slot.produced_to);
      continue;
    }
    if (options_.metrics) options_.metrics->ProduceError(r.error_name);
    switch (r.result) {
      case DeliveryResult::kDiscard:
        Discard(r.seq, slot, r.reason, r.error);
        break;
      case DeliveryResult::kTooLarge:
        // The broker's limit applies to the batch: only a message refused alone is too
        // large. The lane holds its newer entries back meanwhile, so order stays.
        if (slot.alone) {
          Discard(r.seq, slot, r.reason, r.error + " (sent alone)");
        } else {
          slot.alone = true;
          Retry(r.seq, slot, r.error + "; sending it again alone", now);
        }
        break;
      case DeliveryResult::kUnknownTopic:
      case DeliveryResult::kUnknownPartition: {
        std::string why;
        if (TargetMissing(slot, &why)) {
          Discard(r.seq, slot,
                  r.result == DeliveryResult::kUnknownPartition ? kReasonUnknownPartition
                                                                : kReasonUnknownTopic,
                  r.error + "; " + why);
        } else if (Expired(slot) && !AwaitsReconciliation(ts, r.seq, slot)) {
          // A keyed entry the producer cannot route yet (its metadata lags the agent's,
          // or the topic changed): bounded by the age limit, as any other retry.
          Discard(r.seq, slot, kReasonExpired,
                  "older than --max-message-age; last error: " + r.error);
        } else if (slot.lane == kLaneUnordered && r.result == DeliveryResult::kUnknownPartition) {
          // An entry without a key sent to a partition the producer does not know yet (its
          // metadata lags the agent's): it goes to another partition at once, never
          // waiting for a retry while it holds its place in the window, and its topic's
          // unkeyed entries pass over that partition for a while (PickPartition).
          ts.producer.lags[slot.produced_to] =
              now + static_cast<int64_t>(options_.retry_backoff_max_ms);
          --slot.attempts;  // it never reached a broker
          Enqueue(r.seq, slot, *options_.partitions->Get(slot.entry.record.topic));
        } else {
          Retry(r.seq, slot, r.error, now);
          // An ordered lane whose partition the producer does not know yet waits for its
          // retry as a leaderless partition's lane does: it keeps at most its share of
          // the window, so its topic's other partitions are not starved meanwhile.
          if (slot.lane >= 0 && r.result == DeliveryResult::kUnknownPartition) {
            ts.producer.lags[slot.lane] = ts.lanes.Of(slot.lane).retry_at_ms;
          }
        }
        break;
      }
      default:  // kRetry (kQueued and kQueueFull never come as reports)
        // A suspect (possibly persisted, above) waits for its round before it may expire.
        if (Expired(slot) && !AwaitsReconciliation(ts, r.seq, slot)) {
          Discard(r.seq, slot, kReasonExpired,
                  "older than --max-message-age; last error: " + r.error);
        } else {
          options_.partitions->RequestRefresh(slot.entry.record.topic);  // a leader may have moved
          Retry(r.seq, slot, r.error, now);
        }
        break;
    }
  }
}

void DrainLoop::Finish(uint64_t seq, Slot& slot, wal::Outcome outcome, int64_t now) {
  // When the outcome became known: the index keeps it and the listener is told it.
  if (outcome.time_ms == 0) outcome.time_ms = options_.clock->NowMillis();
  Settler::Store(seq, slot, std::move(outcome));
  MarkFinished(seq, slot, now);
}

void DrainLoop::MarkFinished(uint64_t seq, Slot& slot, int64_t now) {
  settler_.Finished(seq, slot, now);
}

void DrainLoop::Retry(uint64_t seq, Slot& slot, const std::string& error, int64_t now) {
  Lane& lane = topics_[slot.entry.record.topic].lanes.Of(slot.lane);
  const bool new_round = lane.waiting.empty() || now >= lane.retry_at_ms;
  if (new_round) {
    // A new failed round for this lane: back off exponentially, with jitter. Failures
    // that arrive while a round waits join it, so they go out together, in order.
    uint64_t backoff = options_.retry_backoff_ms;
    for (int i = 0; i < lane.failures && backoff < options_.retry_backoff_max_ms; ++i) backoff *= 2;
    backoff = std::min(backoff, options_.retry_backoff_max_ms);
    backoff = backoff / 2 + std::uniform_int_distribution<uint64_t>(0, backoff / 2)(rng_);
    lane.retry_at_ms = std::max(lane.retry_at_ms, now + static_cast<int64_t>(backoff));
    ++lane.failures;
  }
  lane.waiting.insert(seq);
  slot.state = Slot::kBackoff;
  // One line per failed round of a lane, not per message: a round may hold thousands.
  if (new_round && (lane.failures <= 1 || lane.failures % 10 == 0)) {
    spdlog::warn("kafka: delivery to {} failed (seq {}, round {}): {}; retrying the lane in {} ms",
                 slot.entry.record.topic, seq, lane.failures, error, lane.retry_at_ms - now);
  }
}

void DrainLoop::Discard(uint64_t seq, Slot& slot, const std::string& reason,
                        const std::string& error) {
  const bool decoded = slot.entry.status.ok();
  const std::string& topic = slot.entry.record.topic;
  spdlog::warn("drain: discarding seq {} (topic '{}') as {}: {}; kept in the dead letters", seq,
               topic, reason, error);
  wal::Outcome discarded = wal::Outcome::Discarded(seq, topic, reason, error);
  discarded.raw = decoded ? wal::EncodeRecord(slot.entry.record) : slot.entry.raw;
  discarded.size = slot.entry.size;
  discarded.receive_time_ms = decoded ? slot.entry.record.receive_time_ms : 0;
  Finish(seq, slot, std::move(discarded), options_.clock->MonotonicMillis());
  discarded_.fetch_add(1);
}

bool DrainLoop::Expired(const Slot& slot) const {
  // A message's age is measured on the wall clock, as its receive time is.
  return options_.max_message_age_ms > 0 && slot.entry.status.ok() &&
         options_.clock->NowMillis() - slot.entry.record.receive_time_ms >
             static_cast<int64_t>(options_.max_message_age_ms);
}

bool DrainLoop::TargetMissing(const Slot& slot, std::string* why) {
  const std::string& topic = slot.entry.record.topic;
  TopicState& ts = topics_[topic];
  // Fresh answers only: each one asked for after a failure counts once, for all the
  // entries that failed meanwhile; the request never blocks the loop.
  options_.partitions->RequestRefresh(topic);
  std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(topic);
  const int32_t p = slot.entry.record.partition;
  bool missing = false;
  if (absl::IsNotFound(layout->status)) {
    *why = "the cluster says topic " + topic + " does not exist";
    missing = true;
  } else if (layout->status.ok() && p >= layout->partition_count()) {
    *why = "topic " + topic + " has " + std::to_string(layout->partition_count()) +
           " partitions, not " + std::to_string(p + 1);
    missing = true;
  }
  if (!missing) {
    if (layout->status.ok()) ts.missing.answers = 0;
    return false;
  }
  if (layout->generation > ts.missing.generation) {
    ts.missing.generation = layout->generation;
    ++ts.missing.answers;
  }
  return ts.missing.answers >= static_cast<int>(options_.unknown_topic_checks);
}

}  // namespace kspool::agent
