// The simulation's state and steps, shared by simulation.cc (setup, faults, steps,
// crashes, healing) and simulation_checks.cc (the model's invariants). Internal to
// tests/sim. Thread safety: none; one simulation per thread.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <vector>

#include "agent/drain/commit_tracker.h"
#include "agent/drain/drain_loop.h"
#include "agent/drain/partition_cache.h"
#include "tests/support/partial_scan_log.h"
#include "tests/sim/sim_env.h"
#include "tests/sim/simulation.h"
#include "tests/sim/sim_kafka.h"
#include "tests/sim/sim_reconciler.h"
#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::sim {

inline constexpr int64_t kAgeSlackMs = 10'000;
inline constexpr int64_t kLiveBoundMs = 30'000;
inline constexpr int kHealPasses = 6000;  // of 50 ms: 300 s of simulated time at most
// What one entry of the backlog at heal costs a window of one entry: it is read, produced,
// lands (a partition's batch goes out in 80% of steps), is reported and settled before
// the next is read, 3.2 passes of 50 ms on average (measured: 185 entries in 589 passes,
// seed 415649735825 with a 1-message window); 4 passes bound it.
inline constexpr int64_t kHealMsPerEntry = 200;

struct ModelEntry {
  std::string topic;
  std::optional<std::string> key;
  std::string value;
  bool acked = false;
  uint64_t seq = 0;
  int64_t receive_ms = 0;  // wall
  int64_t append_mono = 0;
  bool landed = false;
  bool discarded = false;
  // Its record's bytes were changed while the agent was down (record_corruption): the
  // agent can only discard it as corrupt, also after a copy landed.
  bool corrupted = false;
};

struct KeyOrder {
  uint64_t max_seq = 0;
  std::set<uint64_t> seen;
};

class Simulation : public agent::OutcomeListener {
 public:
  explicit Simulation(const SimConfig& c)
      : cfg_(c),
        rng_(c.seed),
        clock_(1'700'000'000'000),
        fs_(std::make_shared<testing::FaultInjectionFileSystem>()),
        jobs_env_(std::make_shared<BackgroundJobsEnv>(testing::EnvFor(fs_))),
        env_(jobs_env_),
        kafka_(&rng_, &clock_, [this](const std::string& t, int32_t p, const Landed& l,
                                      const char*, size_t) { OnLand(t, p, l); }) {
    kafka_.on_produce = [this](uint64_t seq) { OnProduce(seq); };
  }

  SimResult Run();

  // OutcomeListener: the discards the drain decided.
  void Settled(const std::vector<wal::Outcome>& outcomes) override {
    for (const wal::Outcome& o : outcomes) {
      if (o.delivered()) settled_delivered_.insert(o.seq);
    }
    Learn(outcomes);
  }
  void NotSettled(const std::vector<wal::Outcome>& outcomes, const absl::Status&) override {
    Learn(outcomes);
  }

 private:
  bool On(Fault f) const { return cfg_.faults.Has(f); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  int64_t Mono() { return clock_.MonotonicMillis(); }
  void Mix(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      digest_ ^= (v >> (8 * i)) & 0xff;
      digest_ *= 1099511628211ull;
    }
  }
  void MixStr(const std::string& s) {
    for (char ch : s) Mix(static_cast<unsigned char>(ch));
  }
  void Fail(const std::string& what) {
    if (!violation_.empty()) return;
    std::ostringstream o;
    o << "step " << step_ << " (simulated " << Mono() - start_mono_ << " ms): " << what;
    violation_ = o.str();
    if (cfg_.verbose && drain_) {
      std::fprintf(stderr, "drain state: %ssimulated Kafka at %lld: %s", drain_->DebugString().c_str(),
                   static_cast<long long>(Mono()), kafka_.DebugString().c_str());
    }
  }
  void Trace(const std::string& what) {
    if (cfg_.verbose) std::fprintf(stderr, "[step %llu] %s\n", static_cast<unsigned long long>(step_), what.c_str());
  }
  void Injected(const std::string& what) {
    ++faults_;
    MixStr(what);
    Trace(what);
  }

  void Configure();
  void Open();
  // The agent crashes and starts again; with `power`, what was not synced is lost. With
  // `while_down`, it runs while the WAL is closed.
  void Crash(bool power, const std::function<void()>& while_down = nullptr);
  // A crash during which a byte of a random live entry's stored record changes.
  void CorruptRecord();
  void Append();
  void AppendWide();
  // simulation_operator.cc
  void Maintain();
  void ReplayDeadLetters();
  void Acked(const std::vector<uint64_t>& ids, const wal::AppendResult& r);
  // What one entry costs a window of one entry: kHealMsPerEntry, or more when delivery
  // reports come late (slow_reports: the entry holds its place until its report).
  int64_t CarryMsPerEntry() const {
    return std::max<int64_t>(kHealMsPerEntry, 4 * 50 + kafka_.report_delay_max_ms);
  }
  void InjectFaults();
  void Schedule(int64_t at, std::function<void()> fn) { events_.emplace(std::make_pair(at, next_event_++), std::move(fn)); }
  void RunEvents();
  // Waits for RocksDB's background jobs (BackgroundJobsEnv), so that what a scan reads
  // and what a crash finds do not depend on their timing.
  void Quiesce() {
    if (!jobs_env_->WaitIdle(std::chrono::seconds(30))) Trace("RocksDB's background jobs still run");
  }
  void Pass(bool faults);
  void Heal();
  void Check();
  void CheckWal();
  void CheckBooks(const std::vector<wal::Entry>& live);
  void CheckDeliveryIndex(const std::map<uint64_t, const wal::Entry*>& live);
  void OnLand(const std::string& topic, int32_t partition, const Landed& l);
  // Reconciliation: an entry Kafka held when the drain started (and still holds) must not
  // be produced again by that drain (SimReconciler reads every partition with a leader).
  void OnProduce(uint64_t seq);
  void NoteInKafkaAtOpen();
  void Learn(const std::vector<wal::Outcome>& outcomes);
  bool Done(const ModelEntry& e) const { return e.landed || e.discarded; }
  // Whether an acknowledged entry is not Done yet; prunes open_ of those that are.
  bool AnyOpen() {
    for (auto it = open_.begin(); it != open_.end(); it = open_.erase(it)) {
      if (!Done(*it->second)) return true;
    }
    return false;
  }

  const SimConfig cfg_;
  std::mt19937_64 rng_;
  ManualClock clock_;
  testing::TempDir dir_;
  std::shared_ptr<testing::FaultInjectionFileSystem> fs_;
  std::shared_ptr<BackgroundJobsEnv> jobs_env_;
  std::shared_ptr<rocksdb::Env> env_;
  SimKafka kafka_;
  agent::DrainOptions opts_;
  std::vector<std::string> topics_;
  double append_chance_ = 0.6;  // per step; lower for a window too small for the load
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<testing::PartialScanLog> log_;  // the drain's view of wal_
  std::unique_ptr<agent::PartitionCache> cache_;
  std::unique_ptr<agent::CommitTracker> tracker_;
  std::unique_ptr<SimReconciler> reconciler_;
  std::unique_ptr<agent::DrainLoop> drain_;
  struct Where {
    std::string topic;
    int32_t partition;
    size_t offset;
  };
  std::map<uint64_t, Where> in_kafka_at_open_;  // seq -> a copy, when the drain started
  uint64_t reproduced_checked_ = 0;             // in-doubt produces checked against it
  // Topics deleted and recreated: a settled watermark of the old topic may lie inside the
  // new log, and a restart reading from it misses copies (wal/FORMAT.md, "Settled
  // watermarks": duplicates only). OnProduce does not check them.
  std::set<std::string> recreated_;

  std::map<uint64_t, ModelEntry> entries_;  // by writer id (in the value)
  std::map<uint64_t, uint64_t> by_seq_;     // acknowledged seq -> writer id
  // The ids of acknowledged entries, less (once a check has looked) those Done: the
  // per-step checks look at these only, not at every entry of the run.
  // (entries_ is a std::map: the pointers stay valid.)
  std::map<uint64_t, const ModelEntry*> open_;
  uint64_t next_id_ = 1;
  std::map<std::tuple<std::string, int32_t, std::string>, KeyOrder> order_;
  std::map<std::pair<int64_t, uint64_t>, std::function<void()>> events_;
  uint64_t next_event_ = 0;
  std::map<std::string, int64_t> topic_fault_ms_;  // monotonic: last fault of the topic
  int64_t global_fault_ms_ = 0;
  int64_t clock_step_mono_ = 0;  // monotonic: the last wall-clock step
  int64_t next_forget_mono_ = 0;  // topic_forget: the next ForgetIdleTopics()
  int64_t next_trim_mono_ = 0;    // trims: the next TrimDeadLetters() and TrimDeliveries()
  std::set<uint64_t> replayed_;   // dead_replay: the dead letters replayed (their old seqs)
  std::set<uint64_t> replay_in_doubt_;  // ... and the model ids of those whose replay failed
  // Sequence numbers this process settled as delivered (check 11); a crash forgets them.
  std::set<uint64_t> settled_delivered_;
  // Per topic, the last step its in-doubt entries were held for reconciliation (check 6).
  std::map<std::string, int64_t> reconcile_held_mono_;
  wal::CommitPoints last_points_;
  std::string violation_;
  uint64_t digest_ = 1469598103934665603ull;
  uint64_t step_ = 0, faults_ = 0, discarded_ = 0;
  int64_t start_mono_ = 0;
  int64_t heal_allowance_ms_ = 0;  // check 7's allowance once healing (Heal)
  int64_t heal_read_ms_ = 0;       // of it, the time to read the backlog (the age check's too)
};

}  // namespace kspool::sim
