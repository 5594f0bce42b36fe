#include "tests/agent/drain/fake_producer.h"

#include <algorithm>

namespace kspool::testing {
namespace {

using agent::DeliveryReport;
using agent::DeliveryResult;

DeliveryReport Report(const FakeKafka::Produced& p, DeliveryResult result, std::string error_name,
                      std::string error, int64_t offset = -1) {
  DeliveryReport r;
  r.seq = p.seq;
  r.result = result;
  r.error_name = std::move(error_name);
  r.error = std::move(error);
  r.partition = p.partition;
  r.offset = offset;
  return r;
}

}  // namespace

DeliveryReport FakeKafka::Transient(const std::string& error_name) {
  DeliveryReport r;
  r.result = DeliveryResult::kRetry;
  r.error_name = error_name;
  r.error = "scripted failure: " + error_name;
  return r;
}

bool FakeKafka::HasLeader(const std::string& topic, int32_t p) const {
  auto it = leaders.find(topic);
  if (it == leaders.end()) return false;
  if (p < 0) p = 0;
  return p < static_cast<int32_t>(it->second.size()) && it->second[static_cast<size_t>(p)];
}

std::vector<uint64_t> FakeKafka::DeliveredSeqs(const std::string& topic, int32_t partition) const {
  std::vector<uint64_t> seqs;
  for (const Produced& p : delivered) {
    if (p.topic == topic && (partition == -2 || p.partition == partition)) seqs.push_back(p.seq);
  }
  return seqs;
}

agent::ProducerFactory FakeKafka::Factory() {
  return [this]() -> absl::StatusOr<std::unique_ptr<agent::Producer>> {
    ++producers_made;
    return std::unique_ptr<agent::Producer>(new FakeProducer(this, fatal));
  };
}

agent::LayoutSource FakeKafka::Layouts() {
  return [this](const std::string& topic) -> absl::StatusOr<std::vector<bool>> {
    auto it = leaders.find(topic);
    if (it == leaders.end()) return absl::NotFoundError("no topic " + topic);
    return it->second;
  };
}

DeliveryReport FakeProducer::Produce(const wal::Entry& entry, int32_t partition) {
  FakeKafka::Produced p{entry.seq, entry.record.topic, partition, entry.record.key};
  topics_.insert(entry.record.topic);
  if (kafka_->partition_by_key && partition == agent::kAnyPartition && entry.record.key &&
      kafka_->leaders.count(entry.record.topic)) {
    auto known = kafka_->client_partitions.find(entry.record.topic);
    const size_t n = known != kafka_->client_partitions.end()
                         ? known->second
                         : kafka_->leaders[entry.record.topic].size();
    if (n > 0) p.partition = agent::KeyPartition(*entry.record.key, static_cast<int>(n));
  }
  kafka_->produced.push_back(p);
  queued_.push_back(std::move(p));
  DeliveryReport queued;
  queued.seq = entry.seq;
  queued.result = DeliveryResult::kQueued;
  return queued;
}

void FakeProducer::Poll(int, std::vector<DeliveryReport>* out) {
  out->insert(out->end(), purged_.begin(), purged_.end());
  purged_.clear();
  if (!FatalError().empty()) return;  // a dead client answers nothing
  std::deque<FakeKafka::Produced> waiting;
  // As a partition's queue in the client: once one message fails, the ones behind it
  // in the same partition fail with it.
  std::map<std::pair<std::string, int32_t>, DeliveryReport> failed;
  // A batch fails whole when it holds more than max_batch messages, or one too large.
  std::map<std::pair<std::string, int32_t>, size_t> batch;
  std::set<std::pair<std::string, int32_t>> too_large;
  for (const FakeKafka::Produced& p : queued_) {
    if (!kafka_->ClientCanSend(p.topic, p.partition)) continue;
    auto limit = kafka_->max_batch.find(p.topic);
    const size_t max = limit == kafka_->max_batch.end() ? SIZE_MAX : limit->second;
    if (++batch[{p.topic, p.partition}] > max || kafka_->too_large.count(p.seq)) {
      too_large.insert({p.topic, p.partition});
    }
  }
  for (FakeKafka::Produced& p : queued_) {
    if (kafka_->HasLeader(p.topic, p.partition) && too_large.count({p.topic, p.partition})) {
      DeliveryReport r = Report(p, DeliveryResult::kTooLarge, "MSG_SIZE_TOO_LARGE",
                                "Broker: Message size too large");
      r.reason = "msg_size_too_large";
      out->push_back(std::move(r));
      continue;
    }
    if (kafka_->hold.count(p.seq)) {
      waiting.push_back(std::move(p));
      continue;
    }
    auto f = failed.find({p.topic, p.partition});
    if (f != failed.end()) {
      out->push_back(Report(p, f->second.result, f->second.error_name, f->second.error));
      continue;
    }
    if (!kafka_->leaders.count(p.topic)) {
      out->push_back(Report(p, DeliveryResult::kUnknownTopic, "_UNKNOWN_TOPIC", "unknown topic"));
      continue;
    }
    auto known = kafka_->client_partitions.find(p.topic);
    const size_t partitions = known != kafka_->client_partitions.end()
                                  ? known->second
                                  : kafka_->leaders[p.topic].size();
    if (p.partition >= static_cast<int32_t>(partitions)) {
      // As librdkafka once its metadata says the partition does not exist.
      out->push_back(Report(p, DeliveryResult::kUnknownPartition, "_UNKNOWN_PARTITION",
                            "Local: Unknown partition"));
      continue;
    }
    if (!kafka_->ClientCanSend(p.topic, p.partition)) {
      waiting.push_back(std::move(p));  // the client waits for a leader
      continue;
    }
    auto fail = kafka_->fail_once.find(p.seq);
    if (fail != kafka_->fail_once.end()) {
      out->push_back(Report(p, fail->second.result, fail->second.error_name, fail->second.error));
      out->back().possibly_persisted = fail->second.possibly_persisted;
      failed[{p.topic, p.partition}] = fail->second;
      kafka_->fail_once.erase(fail);
      continue;
    }
    auto end = kafka_->log_end.find({p.topic, p.partition});
    const int64_t offset = end == kafka_->log_end.end() ? 0 : end->second++;
    out->push_back(Report(p, DeliveryResult::kDelivered, "", "", offset));
    kafka_->delivered.push_back(std::move(p));
  }
  queued_.swap(waiting);
}

void FakeProducer::PurgeQueued(const std::vector<agent::TopicPartition>& partitions) {
  ++kafka_->purges;
  std::deque<FakeKafka::Produced> kept;
  for (FakeKafka::Produced& p : queued_) {
    // kAnyPartition: where this client put it, partition 0.
    const bool purged = !kafka_->on_wire.count(p.seq) &&
                        std::any_of(partitions.begin(), partitions.end(), [&](const auto& tp) {
      return tp.topic == p.topic &&
             (tp.partition == agent::kEveryPartition || tp.partition == std::max(p.partition, 0));
    });
    if (purged) {
      purged_.push_back(Report(p, DeliveryResult::kPurged, "_PURGE_QUEUE", "purged"));
    } else {
      kept.push_back(std::move(p));
    }
  }
  queued_.swap(kept);
}

void FakeProducer::PurgeAll() {
  for (const FakeKafka::Produced& p : queued_) {
    purged_.push_back(Report(p, DeliveryResult::kPurged, "_PURGE_QUEUE", "purged"));
    // Held: on the wire, unanswered (librdkafka's _PURGE_INFLIGHT).
    purged_.back().possibly_persisted = kafka_->hold.count(p.seq) + kafka_->on_wire.count(p.seq) > 0;
  }
  queued_.clear();
}

}  // namespace kspool::testing
