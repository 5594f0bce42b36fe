// SimKafka: a simulated Kafka cluster and its producer client behind the drain's Producer
// interface (agent/drain/producer.h), for the drain simulator. Every decision comes from
// the simulation's seeded PRNG and the manual clock: no threads, no sleeps.
//
// Model: per topic, partitions with or without a leader and a log of what landed; the
// agent's metadata view (the PartitionCache's source, which can fail) is the cluster's
// own, while the producer's view of a topic's partition count catches up only
// `view_lag_ms` after a change (as a Kafka client's metadata refresh does). A produced
// message waits in its partition's client queue; Advance() lands the queue's head in
// order while the partition has a leader (Kafka with idempotence keeps a partition's
// order), or fails the whole queue (transient error, timeout, unknown partition), and
// schedules the delivery reports, possibly late and reordered across partitions (never
// within one). After a partition's queue failed, Produce() to that partition fails at
// once until the drain has polled the failure's reports: the model assumes a client that
// tells a failure before it accepts more for the partition, so that the drain's ordered
// lanes can hold back what follows (the real client narrows this to the time between a
// failure and the next poll). PurgeQueued takes back the named partitions' queued
// messages, PurgeAll every queued message. The client does not copy payloads (librdkafka's RD_KAFKA_MSG_F_... without COPY, as the real producer): a
// message keeps a pointer to the drain's value bytes and reads them when it lands, so a
// drain that frees a value in flight is seen (a use-after-free under ASan, else a
// corrupt value).
// Thread safety: none; the simulation's one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "agent/drain/drain_loop.h"
#include "agent/drain/producer.h"
#include "base/clock.h"

namespace kspool::sim {

// A message that reached a partition's log.
struct Landed {
  uint64_t seq;
  std::optional<std::string> key;
  std::string value;
};

struct SimPartition {
  bool leader = true;
  std::vector<Landed> log;
};

struct SimTopic {
  bool exists = true;
  std::vector<SimPartition> partitions;
  int producer_view = 0;             // partition count the producer believes in
  int64_t view_catches_up_ms = 0;    // monotonic: when producer_view becomes the truth
  int64_t metadata_fails_until = 0;  // monotonic
};

class SimProducer;

class SimKafka {
 public:
  // Told of every message as it lands (before its report), for the model's checks.
  using OnLand = std::function<void(const std::string& topic, int32_t partition, const Landed&,
                                    const char* value_data, size_t value_size)>;
  SimKafka(std::mt19937_64* rng, ManualClock* clock, OnLand on_land)
      : rng_(rng), clock_(clock), on_land_(std::move(on_land)) {}

  std::map<std::string, SimTopic>& topics() { return topics_; }
  void AddTopic(const std::string& name, int partitions);

  // Fault switches, set by the simulation.
  int64_t queue_full_until = 0;     // monotonic
  int64_t report_delay_max_ms = 5;  // reports come 0..this late
  int64_t view_lag_ms = 5000;
  double transient_rate = 0;        // per landing round of a partition
  double permanent_rate = 0;        // per message
  int64_t message_timeout_ms = 30000;
  void FailProducerFatally();       // the current producer reports a fatal error
  // Told of every message a producer accepts (for the simulation's reconciliation check).
  std::function<void(uint64_t seq)> on_produce;
  // Copies in Kafka the drain was never told of as delivered, where they landed: those
  // whose report was pending when a producer that hit a fatal error was replaced, and
  // those written on the wire as a leader died and then reported failed (LoseLeader).
  // The drain hears of them only by reconciling (the simulation fails a seed that
  // produces one again).
  struct Copy {
    std::string topic;
    int32_t partition = 0;
    size_t offset = 0;
  };
  std::map<uint64_t, Copy> unreported_copies;

  // The partition's leader dies. The request on the wire may have been written first
  // (for every other queue head, no randomness): the message landed, and the client
  // reports it failed but possibly persisted when it times out or is purged, or
  // delivered at that offset if the partition comes back first (the idempotent
  // producer's retry is deduplicated by the broker).
  void LoseLeader(const std::string& topic, int32_t partition);
  // One step of the cluster: producers' views catch up, queues move.
  void Advance();
  // The process dies: what is on the wire may land, reports are lost.
  void Crash();

  agent::ProducerFactory Factory();
  agent::LayoutSource Layouts();

  // Errors injected so far (transient rounds, permanent messages), and per topic the
  // monotonic time of its last one (the simulation's liveness bound starts after it).
  uint64_t faults = 0;
  std::map<std::string, int64_t> last_fault_ms;

  uint64_t produced() const { return produced_; }
  uint64_t landed() const { return landed_; }
  int producers_made() const { return producers_made_; }
  bool TopicHealthy(const std::string& topic, int64_t now) const;
  // The current producer's queues and pending reports, for a failing seed's report.
  std::string DebugString() const;

 private:
  friend class SimProducer;
  struct Msg {
    uint64_t seq;
    std::string topic;
    int32_t partition;
    std::optional<std::string> key;
    const char* value;  // the drain's bytes, not copied
    size_t value_size;
    int64_t queued_ms;
    int64_t landed_at = -1;  // >= 0: written on the wire at this offset (LoseLeader)
  };
  std::mt19937_64* const rng_;
  ManualClock* const clock_;
  const OnLand on_land_;
  std::map<std::string, SimTopic> topics_;
  // Per seq, decided at its first send: whether its error is permanent. Such an error
  // repeats (a record the broker refuses is refused again), also after a restart.
  std::map<uint64_t, bool> refused_;
  SimProducer* current_ = nullptr;
  uint64_t produced_ = 0, landed_ = 0;
  int producers_made_ = 0;
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(*rng_) < p; }
  void Land(const Msg& m, SimPartition& p);
};

class SimProducer final : public agent::Producer {
 public:
  explicit SimProducer(SimKafka* kafka) : kafka_(kafka) {}
  ~SimProducer() override;
  agent::DeliveryReport Produce(const wal::Entry& entry, int32_t partition) override;
  void Poll(int timeout_ms, std::vector<agent::DeliveryReport>* out) override;
  int OutstandingMessages() const override;
  void PurgeQueued(const std::vector<agent::TopicPartition>& partitions) override;
  void PurgeAll() override;
  std::string FatalError() const override { return fatal_; }
  int BrokersUp() const override { return 1; }
  size_t KnownTopics() const override { return topics_.size(); }

 private:
  friend class SimKafka;
  struct Pending {
    int64_t ready_ms;
    uint64_t order;  // ties: in scheduling order
    agent::DeliveryReport report;
    std::string topic;
  };
  void Report(const std::string& topic, int32_t partition, agent::DeliveryReport r, int64_t delay);
  // Takes back the partition's queued messages: their kPurged reports come next poll.
  void PurgeQueue(const std::string& topic, int32_t partition);
  SimKafka* const kafka_;
  std::string fatal_;
  // Per (topic, partition): messages queued in the client, oldest first.
  std::map<std::pair<std::string, int32_t>, std::deque<SimKafka::Msg>> queues_;
  std::vector<Pending> reports_;
  std::map<std::pair<std::string, int32_t>, int64_t> last_ready_;  // per-partition order
  // Partitions whose queue failed, with the report order of the last failure: until the
  // drain has polled it, Produce() to them fails at once (see Produce).
  std::map<std::pair<std::string, int32_t>, uint64_t> failed_until_reported_;
  uint64_t next_order_ = 0;
  std::set<std::string> topics_;  // produced to (the drain replaces a producer past a bound)
};

}  // namespace kspool::sim
