// The simulation: setup, one step, crashes, healing, and the invariants.
//
// Invariants, checked after every step (the first broken one ends the run):
//  1. the drain's own recount of its window (DrainLoop::CheckInvariants);
//  2. what lands in Kafka is the value that was appended (no freed or reused buffers);
//  3. per-key order per partition: a key's entry never lands after a later entry of the
//     same key landed there, unless it landed there before (a duplicate after a crash
//     or a lost report is allowed, a reorder is not);
//  4. nothing acknowledged leaves the WAL before it landed in Kafka or was discarded
//     with a reason;
//  5. the commit points never decrease (also across restarts) and never reach the
//     receive time of an entry still in the WAL;
//  6. with --max-message-age, no entry older than it by more than kAgeSlackMs waits
//     undelivered and undiscarded, whatever its partition's state (for kAgeSlackMs after
//     a step of the wall clock, which ages entries at once, this is not checked);
//  7. isolation and liveness: an entry of a topic whose partitions all have leaders (no
//     metadata failure, no injected error, no producer lagging behind a partition
//     change) lands or is discarded within kLiveBoundMs of when it was appended or of
//     the last fault that concerned its topic or the whole agent, while other topics
//     may be stuck;
//  8. at the end, after the faults are healed: every acknowledged entry landed or was
//     discarded with a reason (nothing acknowledged is lost).
#include "tests/sim/simulation.h"

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
#include "tests/sim/sim_kafka.h"
#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::sim {
namespace {

constexpr int64_t kAgeSlackMs = 10'000;
constexpr int64_t kLiveBoundMs = 30'000;
constexpr int kHealPasses = 6000;  // of 50 ms: 300 s of simulated time at most

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
        env_(testing::EnvFor(fs_)),
        kafka_(&rng_, &clock_, [this](const std::string& t, int32_t p, const Landed& l,
                                      const char*, size_t) { OnLand(t, p, l); }) {}

  SimResult Run();

  // OutcomeListener: the discards the drain decided.
  bool Wanted() const override { return true; }
  void Known(const std::vector<wal::Outcome>& outcomes) override { Learn(outcomes); }
  void Settled(const std::vector<wal::Outcome>& outcomes) override { Learn(outcomes); }

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
    if (cfg_.verbose && drain_) std::fprintf(stderr, "drain state: %s", drain_->DebugString().c_str());
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
  void Crash(bool power);
  void Append();
  void InjectFaults();
  void Schedule(int64_t at, std::function<void()> fn) { events_.emplace(std::make_pair(at, next_event_++), std::move(fn)); }
  void RunEvents();
  void Pass(bool faults);
  void Heal();
  void Check();
  void CheckWal();
  void OnLand(const std::string& topic, int32_t partition, const Landed& l);
  void Learn(const std::vector<wal::Outcome>& outcomes);
  bool Done(const ModelEntry& e) const { return e.landed || e.discarded; }

  const SimConfig cfg_;
  std::mt19937_64 rng_;
  ManualClock clock_;
  testing::TempDir dir_;
  std::shared_ptr<testing::FaultInjectionFileSystem> fs_;
  std::shared_ptr<rocksdb::Env> env_;
  SimKafka kafka_;
  agent::DrainOptions opts_;
  std::vector<std::string> topics_;
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<agent::PartitionCache> cache_;
  std::unique_ptr<agent::CommitTracker> tracker_;
  std::unique_ptr<agent::DrainLoop> drain_;

  std::map<uint64_t, ModelEntry> entries_;  // by writer id (in the value)
  std::map<uint64_t, uint64_t> by_seq_;     // acknowledged seq -> writer id
  uint64_t next_id_ = 1;
  std::map<std::tuple<std::string, int32_t, std::string>, KeyOrder> order_;
  std::map<std::pair<int64_t, uint64_t>, std::function<void()>> events_;
  uint64_t next_event_ = 0;
  std::map<std::string, int64_t> topic_fault_ms_;  // monotonic: last fault of the topic
  int64_t global_fault_ms_ = 0;
  int64_t clock_step_mono_ = 0;
  wal::CommitPoints last_points_;
  std::string violation_;
  uint64_t digest_ = 1469598103934665603ull;
  uint64_t step_ = 0, faults_ = 0, discarded_ = 0;
  int64_t start_mono_ = 0;
};

void Simulation::Configure() {
  const size_t n = 2 + Below(5);
  for (size_t i = 0; i < n; ++i) {
    topics_.push_back("t" + std::to_string(i));
    kafka_.AddTopic(topics_.back(), 1 + static_cast<int>(Below(6)));
  }
  opts_.clock = &clock_;
  opts_.outcomes = this;
  opts_.random_seed = cfg_.seed * 2654435761u + 1;
  opts_.max_inflight_messages = On(Fault::kCrowdedWindow) && Chance(0.3) && n > 2
                                    ? 1 + Below(n - 1)
                                    : 8 + Below(250);
  // Without tight_byte_window, every topic's share of the bytes holds a whole entry.
  opts_.max_inflight_bytes = On(Fault::kTightByteWindow) && Chance(0.3) ? 256 + Below(300 * n)
                             : Chance(0.5)                               ? 400 * n + Below(8192)
                                                                         : 1 << 20;
  opts_.retry_backoff_ms = 10 + Below(100);
  opts_.retry_backoff_max_ms = 200 + Below(1500);
  opts_.max_message_age_ms = Chance(0.5) ? 5000 + Below(20000) : 0;
  opts_.producer_backoff_ms = 50 + Below(200);
  opts_.producer_backoff_max_ms = 2000;
  opts_.purge_interval_ms = 500 + Below(2000);
  opts_.scan_max_keys = Chance(0.5) ? 4 + Below(60) : 65536;
  opts_.stuck_after_ms = 5000;
  kafka_.report_delay_max_ms = On(Fault::kSlowReports) ? std::vector<int64_t>{5, 200, 2000}[Below(3)] : 5;
  kafka_.transient_rate = On(Fault::kTransientError) ? 0.01 : 0;
  kafka_.permanent_rate = On(Fault::kPermanentError) ? 0.002 : 0;
  std::ostringstream o;
  o << "topics " << n << ", window " << opts_.max_inflight_messages << " messages / "
    << opts_.max_inflight_bytes << " bytes, max age " << opts_.max_message_age_ms
    << " ms, scan keys " << opts_.scan_max_keys << ", report delay " << kafka_.report_delay_max_ms;
  Trace(o.str());
}

void Simulation::Open() {
  wal::Options o;
  o.dir = dir_.sub("wal");
  o.clock = &clock_;
  o.env = env_;
  absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
  if (!w.ok()) {
    Trace("WAL open failed, retrying: " + w.status().ToString());
    return;
  }
  wal_ = std::move(w).value();
  agent::PartitionCacheOptions pco;
  pco.background = false;
  pco.clock = &clock_;
  pco.refresh_ms = 1000;
  cache_ = std::make_unique<agent::PartitionCache>(kafka_.Layouts(), pco);
  tracker_ = std::make_unique<agent::CommitTracker>(wal_.get());
  opts_.partitions = cache_.get();
  drain_ = std::make_unique<agent::DrainLoop>(wal_.get(), tracker_.get(), kafka_.Factory(), opts_);
  if (absl::Status s = drain_->Start(/*background=*/false); !s.ok()) Fail("drain start: " + s.ToString());
}

void Simulation::Crash(bool power) {
  Injected(power ? "power cut" : "crash and restart");
  global_fault_ms_ = Mono();
  kafka_.Crash();  // while the drain's buffers are alive: what was on the wire lands
  drain_.reset();
  tracker_.reset();
  cache_.reset();
  if (power) {
    fs_->CutPowerWhile([&] { wal_.reset(); });
  } else {
    wal_.reset();
  }
  Open();
}

void Simulation::Append() {
  const std::string& topic = topics_[Below(topics_.size())];
  const int partitions = static_cast<int>(kafka_.topics()[topic].partitions.size());
  wal::AppendBatch b;
  std::vector<uint64_t> ids;
  std::vector<std::string> keys;
  const size_t n = 1 + Below(4);
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t id = next_id_++;
    ModelEntry& e = entries_[id];
    e.topic = topic;
    if (Chance(0.6)) e.key = "k" + std::to_string(Below(8));
    e.value = "v" + std::to_string(id) + ":" + topic + ":" + std::string(Below(200), 'x');
    wal::RecordView v;
    v.topic = e.topic;
    v.value = e.value;
    if (e.key) v.key = *e.key;
    if (!e.key && Chance(0.05)) v.partition = static_cast<int32_t>(Below(static_cast<uint64_t>(partitions)));
    b.Add(v);
    ids.push_back(id);
  }
  absl::StatusOr<wal::AppendResult> r = wal_->Append(std::move(b));
  Mix(r.ok() ? r->first_seq : 0);
  if (!r.ok()) return;  // not acknowledged: may come back after a reopen, or not
  for (size_t i = 0; i < ids.size(); ++i) {
    ModelEntry& e = entries_[ids[i]];
    e.acked = true;
    e.seq = r->first_seq + i;
    e.receive_ms = r->receive_time_ms;
    e.append_mono = Mono();
    by_seq_[e.seq] = ids[i];
  }
  if (drain_) drain_->Notify();
}

void Simulation::InjectFaults() {
  const int64_t now = Mono();
  auto pick = [&]() -> std::pair<std::string, SimTopic*> {
    const std::string& t = topics_[Below(topics_.size())];
    return {t, &kafka_.topics()[t]};
  };
  auto lose_leader = [&](int64_t duration, const char* what) {
    auto [name, t] = pick();
    if (!t->exists) return;
    const int32_t p = static_cast<int32_t>(Below(t->partitions.size()));
    t->partitions[static_cast<size_t>(p)].leader = false;
    Injected(std::string(what) + " " + name + "/" + std::to_string(p) + " for " + std::to_string(duration) + " ms");
    Schedule(now + duration, [this, name = name, p] {
      SimTopic& st = kafka_.topics()[name];
      if (p < static_cast<int32_t>(st.partitions.size())) st.partitions[static_cast<size_t>(p)].leader = true;
    });
  };
  if (On(Fault::kLeaderLoss) && Chance(0.01)) lose_leader(100 + static_cast<int64_t>(Below(1900)), "leader lost");
  if (On(Fault::kLongLeaderLoss) && Chance(0.002)) {
    const int64_t base = opts_.max_message_age_ms > 0 ? static_cast<int64_t>(opts_.max_message_age_ms) : 20000;
    lose_leader(base + static_cast<int64_t>(Below(static_cast<uint64_t>(2 * base))), "leader lost long");
  }
  if (On(Fault::kMetadataFailure) && Chance(0.005)) {
    auto [name, t] = pick();
    const int64_t d = 500 + static_cast<int64_t>(Below(10000));
    t->metadata_fails_until = std::max(t->metadata_fails_until, now + d);
    Injected("metadata of " + name + " fails for " + std::to_string(d) + " ms");
  }
  if (On(Fault::kPartitionGrowth) && Chance(0.002)) {
    auto [name, t] = pick();
    if (t->exists && t->partitions.size() < 16) {
      const size_t more = 1 + Below(4);
      t->partitions.resize(t->partitions.size() + more);
      t->view_catches_up_ms = now + static_cast<int64_t>(Below(30000));
      Injected(name + " grows to " + std::to_string(t->partitions.size()) + " partitions");
    }
  }
  if (On(Fault::kTopicRecreate) && Chance(0.001)) {
    auto [name, t] = pick();
    if (t->exists && t->partitions.size() > 1) {
      t->exists = false;
      const size_t fewer = 1 + Below(t->partitions.size() - 1);
      const int64_t gone = static_cast<int64_t>(Below(3000));
      Injected(name + " deleted, recreated with " + std::to_string(fewer) + " partitions after " +
            std::to_string(gone) + " ms");
      Schedule(now + gone, [this, name = name, fewer] {
        SimTopic& st = kafka_.topics()[name];
        const int64_t at = Mono();
        st.exists = true;
        st.partitions.assign(fewer, SimPartition{});
        st.view_catches_up_ms = at + static_cast<int64_t>(Below(30000));
        for (auto it = order_.begin(); it != order_.end();) {
          it = std::get<0>(it->first) == name ? order_.erase(it) : std::next(it);
        }
      });
    }
  }
  if (On(Fault::kQueueFull) && Chance(0.005)) {
    kafka_.queue_full_until = now + 10 + static_cast<int64_t>(Below(500));
    Injected("queue full");
  }
  if (On(Fault::kFatalError) && Chance(0.002)) {
    kafka_.FailProducerFatally();
    global_fault_ms_ = now;
    Injected("fatal producer error");
  }
  if (On(Fault::kWalWriteError) && Chance(0.003)) {
    fs_->FailNextSyncs(1);
    Injected("next WAL sync fails");
  }
  if (On(Fault::kClockStep) && Chance(0.002)) {
    const int64_t step = static_cast<int64_t>(Below(70000)) - 10000;
    clock_.Set(clock_.NowMillis() + step);
    clock_step_mono_ = now;  // the age bound starts again: the drain needs a pass or two
    Injected("wall clock steps " + std::to_string(step) + " ms");
  }
  if (On(Fault::kRestart) && Chance(0.001)) Crash(false);
  if (On(Fault::kPowerCut) && Chance(0.001)) Crash(true);
}

void Simulation::RunEvents() {
  while (!events_.empty() && events_.begin()->first.first <= Mono()) {
    std::function<void()> fn = std::move(events_.begin()->second);
    events_.erase(events_.begin());
    fn();
  }
}

void Simulation::Pass(bool faults) {
  ++step_;
  RunEvents();
  if (faults) {
    if (wal_ && Chance(0.6)) Append();
    InjectFaults();
  }
  kafka_.Advance();
  const uint64_t kafka_faults = kafka_.faults;
  if (!drain_) {
    Open();
    global_fault_ms_ = Mono();
  } else {
    const bool read_fault = faults && On(Fault::kWalReadError) && Chance(0.02);
    if (read_fault) {
      const bool corrupt = Chance(0.5);
      fs_->FailReadsOnThisThread(static_cast<int>(Below(4)), 1 + static_cast<int>(Below(2)), corrupt);
      Injected(corrupt ? "WAL read: checksum failure" : "WAL read: I/O error");
      global_fault_ms_ = Mono();
    }
    drain_->RunOnce(0);
    if (std::getenv("KSPOOL_SIM_DUMP")) {
      std::fprintf(stderr, "[step %llu, %lld ms] %s", static_cast<unsigned long long>(step_),
                   static_cast<long long>(Mono() - start_mono_), drain_->DebugString().c_str());
    }
    if (read_fault) fs_->FailReadsOnThisThread(0, 0, false);
  }
  faults_ += kafka_.faults - kafka_faults;
  clock_.Advance(faults ? 1 + static_cast<int64_t>(Below(40)) : 50);
  Check();
}

void Simulation::Heal() {
  Trace("healing");
  events_.clear();
  for (auto& [name, t] : kafka_.topics()) {
    if (!t.exists) {
      t.exists = true;
      t.partitions.assign(std::max<size_t>(1, t.partitions.size()), SimPartition{});
    }
    for (SimPartition& p : t.partitions) p.leader = true;
    t.metadata_fails_until = 0;
    t.view_catches_up_ms = 0;
  }
  kafka_.queue_full_until = 0;
  kafka_.transient_rate = kafka_.permanent_rate = 0;
  global_fault_ms_ = Mono();
  for (int i = 0; i < kHealPasses && violation_.empty(); ++i) {
    Pass(/*faults=*/false);
    bool done = true;
    for (const auto& [id, e] : entries_) {
      if (e.acked && !Done(e)) {
        done = false;
        break;
      }
    }
    if (done) break;
  }
  for (const auto& [id, e] : entries_) {
    if (e.acked && !Done(e)) {
      Fail("lost: acknowledged seq " + std::to_string(e.seq) + " (topic " + e.topic +
           ") neither landed nor was discarded after the faults healed");
      break;
    }
  }
}

void Simulation::OnLand(const std::string& topic, int32_t partition, const Landed& l) {
  Mix(l.seq);
  Mix(static_cast<uint64_t>(partition));
  uint64_t id = 0;
  if (l.value.size() < 2 || l.value[0] != 'v' || !(std::istringstream(l.value.substr(1)) >> id) ||
      !entries_.count(id)) {
    Fail("corrupt data in Kafka: seq " + std::to_string(l.seq) + " landed with an unknown value");
    return;
  }
  ModelEntry& e = entries_[id];
  if (e.value != l.value || e.topic != topic) {
    Fail("corrupt data in Kafka: seq " + std::to_string(l.seq) + " landed with another value");
  }
  if (e.acked && e.seq != l.seq) {
    Fail("seq " + std::to_string(l.seq) + " landed with the value of seq " + std::to_string(e.seq));
  }
  e.landed = true;
  if (!l.key) return;
  KeyOrder& k = order_[{topic, partition, *l.key}];
  if (k.seen.count(l.seq)) return;  // a duplicate
  if (l.seq < k.max_seq) {
    Fail("per-key order: key " + *l.key + " of " + topic + "/" + std::to_string(partition) +
         " received seq " + std::to_string(l.seq) + " after seq " + std::to_string(k.max_seq));
  }
  k.seen.insert(l.seq);
  k.max_seq = std::max(k.max_seq, l.seq);
}

void Simulation::Learn(const std::vector<wal::Outcome>& outcomes) {
  for (const wal::Outcome& o : outcomes) {
    if (o.discard_reason.empty()) continue;
    auto s = by_seq_.find(o.seq);
    if (s == by_seq_.end()) continue;  // not acknowledged to its writer
    ModelEntry& e = entries_[s->second];
    if (!e.discarded) {
      e.discarded = true;
      ++discarded_;
      Mix(o.seq);
      MixStr(o.discard_reason);
    }
  }
}

void Simulation::CheckWal() {
  std::vector<wal::Entry> live;
  if (!wal_ || !wal_->health().ok() || !wal_->Scan(0, 1u << 30, 1u << 30, &live).ok()) return;
  std::map<uint64_t, const wal::Entry*> by_seq;
  for (const wal::Entry& e : live) by_seq[e.seq] = &e;
  for (const auto& [id, e] : entries_) {
    if (e.acked && !Done(e) && !by_seq.count(e.seq)) {
      Fail("seq " + std::to_string(e.seq) + " (topic " + e.topic +
           ") left the WAL before Kafka acknowledged it or it was discarded");
      return;
    }
  }
  const wal::CommitPoints cp = tracker_->Current();
  if (cp.global_ms < last_points_.global_ms) {
    Fail("the global commit point went back from " + std::to_string(last_points_.global_ms) +
         " to " + std::to_string(cp.global_ms));
  }
  for (const auto& [topic, ms] : cp.topics_ms) {
    auto old = last_points_.topics_ms.find(topic);
    if (old != last_points_.topics_ms.end() && ms < old->second) {
      Fail("the commit point of " + topic + " went back from " + std::to_string(old->second) +
           " to " + std::to_string(ms));
    }
  }
  for (const wal::Entry& e : live) {
    if (!e.status.ok()) continue;
    const int64_t rt = e.record.receive_time_ms;
    auto t = cp.topics_ms.find(e.record.topic);
    if (cp.global_ms >= rt || (t != cp.topics_ms.end() && t->second >= rt)) {
      Fail("a commit point reached the receive time " + std::to_string(rt) + " of seq " +
           std::to_string(e.seq) + ", still in the WAL");
      break;
    }
  }
  if (cp.global_ms != 0) last_points_.global_ms = cp.global_ms;
  for (const auto& [topic, ms] : cp.topics_ms) last_points_.topics_ms[topic] = ms;
}

void Simulation::Check() {
  const int64_t now = Mono();
  for (const std::string& t : topics_) {
    auto f = kafka_.last_fault_ms.find(t);
    if (!kafka_.TopicHealthy(t, now) || (f != kafka_.last_fault_ms.end() && f->second > topic_fault_ms_[t])) {
      topic_fault_ms_[t] = now;
    }
  }
  if (now < kafka_.queue_full_until || (wal_ && !wal_->health().ok()) || !drain_) {
    global_fault_ms_ = now;
  }
  if (drain_) {
    if (absl::Status s = drain_->CheckInvariants(); !s.ok()) Fail("drain invariant: " + s.ToString());
  }
  CheckWal();
  const int64_t wall = clock_.NowMillis();
  for (const auto& [id, e] : entries_) {
    if (!e.acked || Done(e)) continue;
    if (opts_.max_message_age_ms > 0 && now - clock_step_mono_ > kAgeSlackMs &&
        wall - e.receive_ms > static_cast<int64_t>(opts_.max_message_age_ms) + kAgeSlackMs) {
      Fail("max-message-age: seq " + std::to_string(e.seq) + " (topic " + e.topic + ") is " +
           std::to_string(wall - e.receive_ms) + " ms old, neither delivered nor discarded");
      break;
    }
    const int64_t since = std::max({e.append_mono, topic_fault_ms_[e.topic], global_fault_ms_});
    if (now - since > kLiveBoundMs) {
      Fail("liveness: seq " + std::to_string(e.seq) + " of healthy topic " + e.topic +
           " undelivered " + std::to_string(now - since) + " ms after its topic's last fault");
      break;
    }
  }
}

SimResult Simulation::Run() {
  start_mono_ = Mono();
  Configure();
  Open();
  for (int i = 0; i < cfg_.steps && violation_.empty(); ++i) Pass(/*faults=*/true);
  if (violation_.empty()) Heal();
  SimResult r;
  r.ok = violation_.empty();
  r.violation = violation_;
  r.steps = step_;
  r.faults = faults_;
  r.landed = kafka_.landed();
  r.discarded = discarded_;
  for (const auto& [id, e] : entries_) r.appended += e.acked ? 1 : 0;
  Trace("reads failed or corrupted: " + std::to_string(fs_->injected_read_faults()));
  Mix(r.appended);
  Mix(r.landed);
  r.digest = digest_;
  drain_.reset();  // before the model it reports to
  return r;
}

}  // namespace

SimResult RunSimulation(const SimConfig& config) {
  Simulation sim(config);
  return sim.Run();
}

}  // namespace kspool::sim
