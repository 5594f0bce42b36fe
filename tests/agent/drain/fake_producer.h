// FakeKafka: a scripted stand-in for a Kafka cluster and its producer client, for unit
// tests of the drain loop's logic (the end-to-end tests use kspool-devkafka). It keeps
// what was produced, answers with a delivery report at the next Poll() unless the
// partition has no leader (then the message waits in the "client" until purged) or does
// not exist (then the report is kUnknownPartition), and
// can fail chosen messages, or the whole producer with a fatal error. It speaks the
// drain's terms (agent/drain/producer.h): no Kafka client is involved.
// Thread safety: none; the test and the drain loop run on one thread (RunOnce()).
#pragma once

#include <deque>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/drain/drain_loop.h"
#include "agent/drain/partition_cache.h"
#include "agent/drain/producer.h"

namespace kspool::testing {

struct FakeKafka {
  struct Produced {
    uint64_t seq;
    std::string topic;
    int32_t partition;  // as asked; kAnyPartition: the client's choice (here: 0), but
                        // see partition_by_key
    std::optional<std::string> key;
  };
  // Per topic: per partition, whether it has a leader. A topic not here does not exist.
  std::map<std::string, std::vector<bool>> leaders;
  std::vector<Produced> produced;   // every Produce() call, in order
  std::vector<Produced> delivered;  // successful reports, in order
  // seq -> the failed report its next delivery gets (e.g. Transient(...)).
  std::map<uint64_t, agent::DeliveryReport> fail_once;
  // Per topic: the most messages of one partition a batch (one Poll()) may hold; a
  // larger batch fails whole with kTooLarge, as a broker's max.message.bytes does.
  std::map<std::string, size_t> max_batch;
  std::set<uint64_t> too_large;  // messages kTooLarge even alone
  // Messages whose report is late: they stay in the client, unanswered (also when one
  // before them in their partition fails), while listed here; on the wire: PurgeAll
  // reports them possibly persisted.
  std::set<uint64_t> hold;
  // Held messages already sent: a queue purge (PurgeQueued, librdkafka's
  // RD_KAFKA_PURGE_F_QUEUE) leaves them to their answer; others held are still queued.
  std::set<uint64_t> on_wire;
  // Partitions whose leader the client cannot reach although the metadata names one (a
  // leader lost, not in the metadata yet): their messages wait in the client's queue,
  // unsent, until it can.
  std::set<std::pair<std::string, int32_t>> unreachable;
  // Per topic: the client's own partition count when its metadata lags the cluster's
  // (absent: the cluster's); a partition beyond it is kUnknownPartition.
  std::map<std::string, size_t> client_partitions;
  // The client partitions a keyed message sent to kAnyPartition by its key over the
  // partitions it knows (as librdkafka does), and `partition` is where it put it.
  bool partition_by_key = false;
  // Per topic and partition, the offset the next delivery there gets, counted on from
  // there; a partition not listed delivers everything at offset 0.
  std::map<std::pair<std::string, int32_t>, int64_t> log_end;
  std::string fatal;  // a producer made while this is set reports it as fatal
  // The producer made as number N (1 the first) hits a fatal error now, with what it
  // holds still unanswered: it answers nothing more (0: none).
  int turn_fatal = 0;
  int producers_made = 0;
  int purges = 0;

  // A transient failure (kRetry), as the client names it, e.g. "REQUEST_TIMED_OUT".
  static agent::DeliveryReport Transient(const std::string& error_name);

  bool HasLeader(const std::string& topic, int32_t p) const;
  // Whether the client can send there: a leader, and not `unreachable`.
  bool ClientCanSend(const std::string& topic, int32_t p) const {
    return HasLeader(topic, p) && !unreachable.count({topic, std::max(p, 0)});
  }
  std::vector<uint64_t> DeliveredSeqs(const std::string& topic, int32_t partition = -2) const;

  // The drain's producer factory and the partition cache's layout source.
  agent::ProducerFactory Factory();
  agent::LayoutSource Layouts();
};

class FakeProducer final : public agent::Producer {
 public:
  explicit FakeProducer(FakeKafka* kafka, std::string fatal)
      : kafka_(kafka), fatal_(std::move(fatal)), id_(kafka->producers_made) {}
  agent::DeliveryReport Produce(const wal::Entry& entry, int32_t partition) override;
  void Poll(int timeout_ms, std::vector<agent::DeliveryReport>* out) override;
  int OutstandingMessages() const override { return static_cast<int>(queued_.size()); }
  void PurgeQueued(const std::vector<agent::TopicPartition>& partitions) override;
  void PurgeAll() override;
  std::string FatalError() const override {
    return kafka_->turn_fatal == id_ ? "Fatal idempotent producer error (turned)" : fatal_;
  }
  int BrokersUp() const override { return 1; }
  size_t KnownTopics() const override { return topics_.size(); }

 private:
  FakeKafka* const kafka_;
  const std::string fatal_;
  const int id_;
  std::deque<FakeKafka::Produced> queued_;
  std::vector<agent::DeliveryReport> purged_;
  std::set<std::string> topics_;  // produced to
};

}  // namespace kspool::testing
