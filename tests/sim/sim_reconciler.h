// SimReconciler: the drain's Reconciler (agent/drain/reconciler.h) over the simulated
// cluster (sim_kafka.h), for the drain simulator: a topic asked about is answered after
// kAnswerMs of simulated time from the partitions' logs, which know what landed where,
// as KafkaReconciler reads them: from the settled watermark + 1 as it was at start (the
// whole log without one, or when it lies beyond the log's end), so a watermark that
// passed a copy not settled yet makes the copy unfound, and the one-copy check fails.
// With KSPOOL_SIM_RECONCILE_FROM_WATERMARKS=0 in the environment: from the start of each
// log (finds more, never less). Before the drain held watermarks back for partitions not
// read back yet (DrainLoop::HoldWatermarks) a few seeds of the full fault set found such
// a watermark; since, 190 seeds of `--faults all` passed (2026-12-03), then 115 and the
// 48 regressions (2026-12-07), and it became the default, in the CI run too.
// A partition without a leader is answered once it has one (looked at again every
// kAnswerMs; only its lane waits); a topic that does not exist, or a partition beyond its
// count, is released with nothing found. No randomness, so runs replay.
// Thread safety: none; the simulation's one thread.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/drain/reconciler.h"
#include "base/clock.h"
#include "tests/sim/sim_kafka.h"
#include "wal/settled_watermarks.h"

namespace kspool::sim {

class SimReconciler final : public agent::Reconciler {
 public:
  static constexpr int64_t kAnswerMs = 100;
  SimReconciler(SimKafka* kafka, ManualClock* clock, wal::SettledWatermarks* watermarks);
  void Reconcile(const std::string& topic, int64_t oldest_receive_ms) override;
  void ReconcileAgain(const std::string& topic, int64_t oldest_receive_ms, uint64_t round) override;
  void Poll(std::vector<agent::ReconcileResult>* out) override;
  uint64_t found() const { return found_; }

 private:
  struct Job {
    std::string topic;
    uint64_t round = 0;  // > 0: from the watermarks as they are when answered
    int64_t due_ms = 0;
    bool known = false;
    std::vector<int32_t> pending;
  };
  SimKafka* const kafka_;
  std::map<std::pair<std::string, int32_t>, int64_t> marks_;
  wal::SettledWatermarks* const watermarks_;
  const bool from_watermarks_;
  ManualClock* const clock_;
  std::vector<Job> jobs_;
  uint64_t found_ = 0;
};

}  // namespace kspool::sim
