// SimReconciler: answering from the simulated cluster's logs (sim_reconciler.h).
#include "tests/sim/sim_reconciler.h"

#include <cstdlib>
#include <optional>

namespace kspool::sim {

SimReconciler::SimReconciler(SimKafka* kafka, ManualClock* clock,
                             wal::SettledWatermarks* watermarks)
    : kafka_(kafka),
      watermarks_(watermarks),
      from_watermarks_([] {
        // As the agent reads: from the watermarks, unless told to read whole logs.
        const char* mode = std::getenv("KSPOOL_SIM_RECONCILE_FROM_WATERMARKS");
        return mode == nullptr || std::string(mode) != "0";
      }()),
      clock_(clock) {
  if (!from_watermarks_) return;  // whole logs
  absl::StatusOr<std::vector<wal::Watermark>> all = watermarks->Watermarks();
  if (!all.ok()) return;  // read from the start: finds more, never less
  for (const wal::Watermark& w : *all) marks_[{w.topic, w.partition}] = w.offset;
}

void SimReconciler::Reconcile(const std::string& topic, int64_t /*oldest_receive_ms*/) {
  jobs_.push_back({topic, 0, clock_->MonotonicMillis() + kAnswerMs, false, {}});
}

void SimReconciler::ReconcileAgain(const std::string& topic, int64_t /*oldest_receive_ms*/,
                                   uint64_t round) {
  jobs_.push_back({topic, round, clock_->MonotonicMillis() + kAnswerMs, false, {}});
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
    r.round = job.round;
    std::map<int32_t, int64_t> now_marks;  // a later round reads from today's watermarks
    if (job.round > 0 && from_watermarks_) {
      absl::StatusOr<std::vector<wal::Watermark>> w = watermarks_->WatermarksOf(job.topic);
      if (w.ok()) {
        for (const wal::Watermark& m : *w) now_marks[m.partition] = m.offset;
      }
    }
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
      std::optional<int64_t> mark;
      if (job.round > 0) {
        if (auto m = now_marks.find(p); m != now_marks.end()) mark = m->second;
      } else if (auto m = marks_.find({job.topic, p}); m != marks_.end()) {
        mark = m->second;
      }
      size_t from = 0;
      if (mark && static_cast<size_t>(*mark) + 1 <= log.size())
        from = static_cast<size_t>(*mark) + 1;
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
