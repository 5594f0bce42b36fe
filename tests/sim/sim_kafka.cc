#include "tests/sim/sim_kafka.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/status/statusor.h"
#include "agent/drain/drain_lanes.h"

namespace kspool::sim {
namespace {
// KSPOOL_SIM_TRACE=<topic>/<partition> (or <topic> for all its partitions): every
// produce, landing and report there on stderr, to follow a failing seed's replay.
bool Traced(const std::string& topic, int32_t partition) {
  static const char* want = std::getenv("KSPOOL_SIM_TRACE");
  return want != nullptr && (topic == want || topic + "/" + std::to_string(partition) == want);
}
void Trace(const std::string& topic, int32_t partition, const std::string& what) {
  if (Traced(topic, partition)) std::fprintf(stderr, "  [%s/%d] %s\n", topic.c_str(), partition, what.c_str());
}
}  // namespace

using agent::DeliveryReport;
using agent::DeliveryResult;

void SimKafka::AddTopic(const std::string& name, int partitions) {
  SimTopic& t = topics_[name];
  t.exists = true;
  t.partitions.assign(static_cast<size_t>(partitions), SimPartition{});
  t.producer_view = partitions;
}

void SimKafka::FailProducerFatally() {
  if (current_) current_->fatal_ = "simulated fatal error (idempotence)";
}

void SimKafka::Land(const Msg& m, SimPartition& p) {
  // Read through the pointer the drain gave, as the client does when it sends.
  Landed l{m.seq, m.key, std::string(m.value, m.value_size)};
  Trace(m.topic, m.partition, "land " + std::to_string(m.seq));
  on_land_(m.topic, m.partition, l, m.value, m.value_size);
  p.log.push_back(std::move(l));
  ++landed_;
}

void SimKafka::LoseLeader(const std::string& topic, int32_t partition) {
  SimPartition& sp = topics_[topic].partitions[static_cast<size_t>(partition)];
  sp.leader = false;
  if (!current_) return;
  auto q = current_->queues_.find({topic, partition});
  if (q == current_->queues_.end() || q->second.empty()) return;
  Msg& head = q->second.front();
  if (head.landed_at >= 0 || head.seq % 2 != 0 || refused_.count(head.seq)) return;
  refused_.try_emplace(head.seq, false);
  Land(head, sp);
  head.landed_at = static_cast<int64_t>(sp.log.size()) - 1;
  unreported_copies[head.seq] = {topic, partition, static_cast<size_t>(head.landed_at)};
  Trace(topic, partition, "written on the wire as the leader dies " + std::to_string(head.seq));
}

void SimKafka::Advance() {
  const int64_t now = clock_->MonotonicMillis();
  for (auto& [name, t] : topics_) {
    if (now >= t.view_catches_up_ms) t.producer_view = static_cast<int>(t.partitions.size());
  }
  if (!current_) return;
  for (auto& entry : current_->queues_) {
    // Named, not structured bindings: a lambda may capture these (C++17, clang).
    const std::pair<std::string, int32_t>& where = entry.first;
    std::deque<Msg>& q = entry.second;
    if (q.empty()) continue;
    const std::string& topic = where.first;
    const int32_t partition = where.second;
    auto fail_all = [&](DeliveryResult result, const char* name) {
      current_->failed_until_reported_[where] = current_->next_order_ + q.size();
      for (const Msg& m : q) {
        DeliveryReport r;
        r.seq = m.seq;
        r.result = result;
        r.error_name = name;
        r.error = std::string("simulated ") + name;
        r.possibly_persisted = m.landed_at >= 0;
        current_->Report(topic, partition, std::move(r),
                         static_cast<int64_t>((*rng_)() % static_cast<uint64_t>(report_delay_max_ms + 1)));
      }
      q.clear();
    };
    auto t = topics_.find(topic);
    if (t == topics_.end() || !t->second.exists) {
      fail_all(DeliveryResult::kUnknownTopic, "UNKNOWN_TOPIC_OR_PART");
      continue;
    }
    if (partition >= static_cast<int32_t>(t->second.partitions.size())) {
      fail_all(DeliveryResult::kUnknownPartition, "UNKNOWN_TOPIC_OR_PART");
      continue;
    }
    SimPartition& sp = t->second.partitions[static_cast<size_t>(partition)];
    if (!sp.leader) {
      if (now - q.front().queued_ms > message_timeout_ms) fail_all(DeliveryResult::kRetry, "_MSG_TIMED_OUT");
      continue;
    }
    if (Chance(transient_rate)) {
      ++faults;
      last_fault_ms[topic] = now;
      fail_all(DeliveryResult::kRetry, "NOT_LEADER_OR_FOLLOWER");
      continue;
    }
    if (!Chance(0.8)) continue;  // this partition's batch is not sent this round
    for (int n = 1 + static_cast<int>((*rng_)() % 8); n > 0 && !q.empty(); --n) {
      Msg m = q.front();
      q.pop_front();
      DeliveryReport r;
      r.seq = m.seq;
      auto refused = refused_.try_emplace(m.seq, false);
      if (refused.second) refused.first->second = Chance(permanent_rate);
      if (m.landed_at >= 0) {
        unreported_copies.erase(m.seq);
        r.result = DeliveryResult::kDelivered;  // the retry, deduplicated by the broker
        r.partition = partition;
        r.offset = m.landed_at;
      } else if (refused.first->second) {
        ++faults;
        last_fault_ms[topic] = now;
        r.result = DeliveryResult::kDiscard;
        r.reason = "sim_permanent";
        r.error_name = "INVALID_RECORD";
        r.error = "simulated permanent error";
      } else {
        Land(m, sp);
        r.result = DeliveryResult::kDelivered;
        r.partition = partition;
        r.offset = static_cast<int64_t>(sp.log.size()) - 1;
      }
      current_->Report(topic, partition, std::move(r),
                       static_cast<int64_t>((*rng_)() % static_cast<uint64_t>(report_delay_max_ms + 1)));
    }
  }
}

void SimKafka::Crash() {
  if (!current_) return;
  // What was on the wire may be in Kafka although no report said so: a prefix of each
  // partition's queue lands (the next process produces it again: a duplicate).
  for (auto& [where, q] : current_->queues_) {
    auto t = topics_.find(where.first);
    if (t == topics_.end() || !t->second.exists ||
        where.second >= static_cast<int32_t>(t->second.partitions.size())) {
      continue;
    }
    SimPartition& sp = t->second.partitions[static_cast<size_t>(where.second)];
    if (!sp.leader) continue;
    for (size_t n = (*rng_)() % (q.size() + 1); n > 0; --n) {
      // A record the broker refused (a permanent error: its contents) is refused again;
      // one never sent before is taken (defect 22 was this simulator's landing it anyway).
      if (q.front().landed_at < 0 && !refused_.try_emplace(q.front().seq, false).first->second) {
        Land(q.front(), sp);
      }
      q.pop_front();
    }
  }
  current_->queues_.clear();
  current_->reports_.clear();
}

bool SimKafka::TopicHealthy(const std::string& topic, int64_t now) const {
  auto t = topics_.find(topic);
  if (t == topics_.end() || !t->second.exists) return false;
  if (now < t->second.metadata_fails_until || now < t->second.view_catches_up_ms) return false;
  for (const SimPartition& p : t->second.partitions) {
    if (!p.leader) return false;
  }
  return true;
}

std::string SimKafka::DebugString() const {
  if (!current_) return "no producer\n";
  std::string out = "producer: " + std::to_string(current_->reports_.size()) + " reports pending";
  for (const auto& [where, q] : current_->queues_) {
    if (!q.empty()) out += ", " + where.first + "/" + std::to_string(where.second) + " queue " + std::to_string(q.size());
  }
  for (const auto& [where, order] : current_->failed_until_reported_) {
    out += ", " + where.first + "/" + std::to_string(where.second) + " refusing";
  }
  for (const auto& p : current_->reports_) out += ", report " + std::to_string(p.report.seq) + " at " + std::to_string(p.ready_ms);
  return out + "\n";
}

agent::ProducerFactory SimKafka::Factory() {
  return [this]() -> absl::StatusOr<std::unique_ptr<agent::Producer>> {
    auto p = std::make_unique<SimProducer>(this);
    current_ = p.get();
    ++producers_made_;
    return std::unique_ptr<agent::Producer>(std::move(p));
  };
}

agent::LayoutSource SimKafka::Layouts() {
  return [this](const std::string& topic) -> absl::StatusOr<std::vector<bool>> {
    auto t = topics_.find(topic);
    if (t == topics_.end()) return absl::NotFoundError("simulated: no such topic");
    if (clock_->MonotonicMillis() < t->second.metadata_fails_until) {
      return absl::UnavailableError("simulated metadata failure");
    }
    if (!t->second.exists) return absl::NotFoundError("simulated: topic deleted");
    std::vector<bool> leaders;
    for (const SimPartition& p : t->second.partitions) leaders.push_back(p.leader);
    return leaders;
  };
}

SimProducer::~SimProducer() {
  if (kafka_->current_ == this) kafka_->current_ = nullptr;
  // Replaced after a fatal error: what landed and was never reported is in Kafka while
  // the drain produces it again (a duplicate reconciliation does not prevent yet).
  if (!fatal_.empty()) {
    for (const Pending& p : reports_) {
      if (p.report.result == DeliveryResult::kDelivered) {
        kafka_->unreported_copies[p.report.seq] = {p.topic, p.report.partition,
                                                   static_cast<size_t>(p.report.offset)};
      }
    }
  }
}

DeliveryReport SimProducer::Produce(const wal::Entry& entry, int32_t partition) {
  topics_.insert(entry.record.topic);
  DeliveryReport r;
  r.seq = entry.seq;
  const int64_t now = kafka_->clock_->MonotonicMillis();
  if (now < kafka_->queue_full_until) {
    r.result = DeliveryResult::kQueueFull;
    return r;
  }
  const std::string& topic = entry.record.topic;
  auto t = kafka_->topics_.find(topic);
  if (t == kafka_->topics_.end() || !t->second.exists) {
    r.result = DeliveryResult::kUnknownTopic;
    r.error_name = "_UNKNOWN_TOPIC";
    r.error = "simulated: the client does not know the topic";
    return r;
  }
  const int view = t->second.producer_view;
  int32_t p = partition;
  if (p == agent::kAnyPartition) {
    p = entry.record.key ? agent::KeyPartition(*entry.record.key, view)
                         : static_cast<int32_t>((*kafka_->rng_)() % static_cast<uint64_t>(view));
  }
  auto failed = failed_until_reported_.find({topic, p});
  if (failed != failed_until_reported_.end()) {
    Trace(topic, p, "refuse " + std::to_string(entry.seq));
    r.result = DeliveryResult::kRetry;
    r.error_name = "NOT_LEADER_OR_FOLLOWER";
    r.error = "simulated: the partition's last messages failed";
    return r;
  }
  if (p >= view) {
    r.result = DeliveryResult::kUnknownPartition;
    r.error_name = "_UNKNOWN_PARTITION";
    r.error = "simulated: the client knows " + std::to_string(view) + " partitions";
    return r;
  }
  Trace(topic, p, "produce " + std::to_string(entry.seq) + " key " + entry.record.key.value_or("-") + (partition == agent::kAnyPartition ? " (any)" : ""));
  queues_[{topic, p}].push_back({entry.seq, topic, p, entry.record.key, entry.record.value.data(),
                                 entry.record.value.size(), now});
  ++kafka_->produced_;
  if (kafka_->on_produce) kafka_->on_produce(entry.seq);
  r.result = DeliveryResult::kQueued;
  return r;
}

void SimProducer::Report(const std::string& topic, int32_t partition, DeliveryReport r,
                         int64_t delay) {
  Trace(topic, partition, "report " + std::to_string(r.seq) + " result " +
                             std::to_string(static_cast<int>(r.result)) + " " + r.error_name);
  int64_t& last = last_ready_[{topic, partition}];
  last = std::max(last, kafka_->clock_->MonotonicMillis() + delay);
  reports_.push_back({last, next_order_++, std::move(r), topic});
}

void SimProducer::Poll(int /*timeout_ms*/, std::vector<DeliveryReport>* out) {
  const int64_t now = kafka_->clock_->MonotonicMillis();
  auto due = std::stable_partition(reports_.begin(), reports_.end(),
                                   [&](const Pending& p) { return p.ready_ms > now; });
  std::vector<Pending> ready(std::make_move_iterator(due), std::make_move_iterator(reports_.end()));
  reports_.erase(due, reports_.end());
  std::sort(ready.begin(), ready.end(), [](const Pending& a, const Pending& b) {
    return a.ready_ms != b.ready_ms ? a.ready_ms < b.ready_ms : a.order < b.order;
  });
  for (Pending& p : ready) out->push_back(std::move(p.report));
  // Failures now told: their partitions accept messages again.
  for (auto it = failed_until_reported_.begin(); it != failed_until_reported_.end();) {
    bool pending = false;
    for (const Pending& p : reports_) pending |= p.order < it->second;
    it = pending ? std::next(it) : failed_until_reported_.erase(it);
  }
}

int SimProducer::OutstandingMessages() const {
  size_t n = reports_.size();
  for (const auto& [where, q] : queues_) n += q.size();
  return static_cast<int>(n);
}

void SimProducer::PurgeQueued(const std::vector<agent::TopicPartition>& partitions) {
  for (const agent::TopicPartition& tp : partitions) {
    if (tp.partition != agent::kEveryPartition) {
      PurgeQueue(tp.topic, tp.partition);
      continue;
    }
    for (const auto& [where, q] : queues_) {
      if (where.first == tp.topic) PurgeQueue(where.first, where.second);
    }
  }
}

void SimProducer::PurgeAll() {
  for (const auto& [where, q] : queues_) PurgeQueue(where.first, where.second);
}

void SimProducer::PurgeQueue(const std::string& topic, int32_t partition) {
  auto it = queues_.find({topic, partition});
  if (it == queues_.end()) return;
  for (const SimKafka::Msg& m : it->second) {
    DeliveryReport r;
    r.seq = m.seq;
    r.result = DeliveryResult::kPurged;
    r.possibly_persisted = m.landed_at >= 0;
    Trace(topic, partition, "purge " + std::to_string(m.seq));
    r.error_name = "_PURGE_QUEUE";
    // Served by the next poll, ahead of reports still waiting for brokers (as librdkafka
    // does with purged messages, which never left the client).
    reports_.push_back({kafka_->clock_->MonotonicMillis(), next_order_++, std::move(r), topic});
  }
  it->second.clear();
}

}  // namespace kspool::sim
