// SimReconciler: answering from the simulated cluster's logs (sim_reconciler.h).
#include "tests/sim/sim_reconciler.h"

#include <cstdlib>

namespace kspool::sim {

SimReconciler::SimReconciler(SimKafka* kafka, ManualClock* clock,
                             wal::SettledWatermarks* watermarks)
    : kafka_(kafka), clock_(clock) {
  const char* mode = std::getenv("KSPOOL_SIM_RECONCILE_FROM_WATERMARKS");
  if (mode == nullptr || std::string(mode) != "1") return;  // whole logs
  absl::StatusOr<std::vector<wal::Watermark>> all = watermarks->Watermarks();
  if (!all.ok()) return;  // read from the start: finds more, never less
  for (const wal::Watermark& w : *all) marks_[{w.topic, w.partition}] = w.offset;
}

void SimReconciler::Reconcile(const std::string& topic, int64_t /*oldest_receive_ms*/) {
  jobs_.push_back({topic, clock_->MonotonicMillis() + kAnswerMs, false, {}});
}

void SimReconciler::Poll(std::vector<agent::ReconcileResult>* out) {
  const int64_t now = clock_->MonotonicMillis();
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& job = *it;
    if (now < job.due_ms) {
      ++it;
      continue;
    }
    agent::ReconcileResult r;
    r.topic = job.topic;
    auto t = kafka_->topics().find(job.topic);
    if (t == kafka_->topics().end() || !t->second.exists) {
      r.released = job.pending;
      r.all_released = true;
      r.ended_early = "topic_missing";
      out->push_back(std::move(r));
      it = jobs_.erase(it);
      continue;
    }
    const std::vector<SimPartition>& parts = t->second.partitions;
    if (!job.known) {
      for (int32_t p = 0; p < static_cast<int32_t>(parts.size()); ++p) job.pending.push_back(p);
      job.known = true;
    }
    std::vector<int32_t> still;
    for (int32_t p : job.pending) {
      if (p >= static_cast<int32_t>(parts.size())) {
        r.released.push_back(p);  // gone: nothing there to find
        continue;
      }
      if (!parts[static_cast<size_t>(p)].leader) {
        still.push_back(p);
        continue;
      }
      r.released.push_back(p);
      const std::vector<Landed>& log = parts[static_cast<size_t>(p)].log;
      auto m = marks_.find({job.topic, p});
      size_t from = 0;
      if (m != marks_.end() && static_cast<size_t>(m->second) + 1 <= log.size()) {
        from = static_cast<size_t>(m->second) + 1;
      }
      for (size_t off = from; off < log.size(); ++off) {
        r.found.push_back({log[off].seq, p, static_cast<int64_t>(off)});
      }
    }
    found_ += r.found.size();
    job.pending = still;
    r.all_released = still.empty();
    out->push_back(std::move(r));
    if (still.empty()) {
      it = jobs_.erase(it);
    } else {
      job.due_ms = now + kAnswerMs;
      ++it;
    }
  }
}

}  // namespace kspool::sim
