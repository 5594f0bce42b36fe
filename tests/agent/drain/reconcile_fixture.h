// The drain with a scripted Reconciler (agent/drain/reconciler.h): it answers only what
// the test scripts and remembers what it was asked. Shared by the reconciliation tests.
// Thread safety: none; a test and its drain run on one thread.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/drain/drain_metrics.h"
#include "agent/drain/reconciler.h"
#include "tests/agent/drain/drain_fixture.h"

namespace kspool::testing {

// Answers only what the test scripts; remembers what it was asked.
class ScriptedReconciler final : public agent::Reconciler {
 public:
  void Reconcile(const std::string& topic, int64_t oldest_receive_ms) override {
    asked[topic] = oldest_receive_ms;
  }
  void ReconcileAgain(const std::string& topic, int64_t oldest_receive_ms,
                      uint64_t round) override {
    asked_again[topic] = {oldest_receive_ms, round};
  }
  void Poll(std::vector<agent::ReconcileResult>* out) override {
    for (auto& r : ready) out->push_back(std::move(r));
    ready.clear();
  }
  void Release(const std::string& topic, std::vector<int32_t> partitions, bool all,
               std::vector<agent::FoundCopy> found = {}, std::string ended_early = "",
               uint64_t round = 0) {
    agent::ReconcileResult r;
    r.topic = topic;
    r.round = round;
    r.released = std::move(partitions);
    r.all_released = all;
    r.found = std::move(found);
    r.ended_early = std::move(ended_early);
    r.bytes_read = 100;
    ready.push_back(std::move(r));
  }
  std::map<std::string, int64_t> asked;
  std::map<std::string, std::pair<int64_t, uint64_t>> asked_again;  // receive time, round
  std::vector<agent::ReconcileResult> ready;
};

struct CountingMetrics final : agent::DrainMetrics {
  void ProduceError(const std::string&) override {}
  void Redelivered(const std::string&) override {}
  void WalReopened() override {}
  void Degraded(const std::string& event) override { degraded[event]++; }
  void ReconcileFound(uint64_t n) override { found += n; }
  void ReconcileRead(uint64_t b, double) override { bytes += b; }
  void ReconcileEndedEarly(const std::string& reason) override { ended_early[reason]++; }
  uint64_t found = 0;
  uint64_t bytes = 0;
  std::map<std::string, int> ended_early;
  std::map<std::string, int> degraded;
};

class DrainReconcile : public DrainFixture {
 protected:
  void StartReconciling(uint64_t max_hold_ms = 60000) {
    agent::DrainOptions o;
    o.wal_reopen_interval_ms = 100;
    o.reconciler = &reconciler_;
    o.metrics = &metrics_;
    o.reconcile_max_hold_ms = max_hold_ms;
    o.random_seed = 7;
    StartDrain(o);
  }
  bool Produced(uint64_t seq) const {
    return std::any_of(kafka_.produced.begin(), kafka_.produced.end(),
                       [&](const FakeKafka::Produced& p) { return p.seq == seq; });
  }
  std::vector<uint64_t> ProducedOf(const std::string& topic) const {
    std::vector<uint64_t> seqs;
    for (const auto& p : kafka_.produced) {
      if (p.topic == topic) seqs.push_back(p.seq);
    }
    return seqs;
  }
  ScriptedReconciler reconciler_;
  CountingMetrics metrics_;
};

}  // namespace kspool::testing
