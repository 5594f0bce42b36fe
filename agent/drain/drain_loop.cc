// DrainLoop: the loop, settling, commit points, stuck topics, WAL reopening. Reading the
// WAL into the window is in drain_read.cc, lanes in drain_routing.cc, producing in
// drain_produce.cc, what a delivery report does in drain_outcomes.cc, the producer's
// replacement and the drain at shutdown in drain_producer_life.cc.
#include "agent/drain/drain_loop.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "base/check.h"
#include "base/status.h"

namespace kspool::agent {

DrainLoop::DrainLoop(wal::DrainLog* wal, CommitTracker* tracker, ProducerFactory factory,
                     DrainOptions options)
    : wal_(wal),
      tracker_(tracker),
      options_(options),
      producer_(std::move(factory), options.producer_backoff_ms, options.producer_backoff_max_ms),
      rng_(static_cast<std::mt19937::result_type>(
          options.random_seed != 0 ? options.random_seed : std::random_device{}())) {}

DrainLoop::~DrainLoop() { Stop(); }

absl::Status DrainLoop::Start(bool background) {
  RETURN_IF_ERROR(producer_.Create());
  reader_.Start(wal_->reopens());
  // What the WAL holds now was written by an earlier process: in doubt until reconciled.
  if (options_.reconciler) in_doubt_.Start(wal_->GetStats().next_seq);
  if (background) thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void DrainLoop::Notify() {
  MutexLock l(&wake_mu_);
  ++wake_count_;
  wake_cv_.Signal();
}

void DrainLoop::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  Notify();
  thread_.join();
}

void DrainLoop::Run() {
  pthread_setname_np(pthread_self(), "kspool-drain");
  // When the cores are busy, acknowledging Sends goes first: a client waits on every
  // ack, while the drain works through a window and the WAL absorbs a lag. Measured on
  // 2 cores (T1): 278k -> 301k msg/s, the drain keeping up. Lowering one's own
  // priority needs no privilege, so this cannot fail.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 5);
  while (!stop_.load()) {
    uint64_t seen_wakes;
    {
      MutexLock l(&wake_mu_);
      seen_wakes = wake_count_;
    }
    // The Kafka client is polled without waiting: its timed waits follow the wall clock.
    // The loop waits here, on the monotonic clock, and is woken by appends (Notify) and
    // by the producer when delivery reports are ready (ProducerConfig::on_reports).
    RunOnce(/*poll_ms=*/0);
    const bool idle = (!read_any_ && window_.empty()) || !producer_;
    if (idle || !read_any_) {
      // Idle, or waiting to replace the producer: until an append or the next commit-point
      // update. Entries in flight: until reports arrive, 5 ms at most.
      MutexLock l(&wake_mu_);
      if (wake_count_ == seen_wakes) {
        wake_cv_.WaitFor(&wake_mu_, std::chrono::milliseconds(
                                        idle ? options_.commit_point_interval_ms : 5));
      }
    }
  }
  DrainForShutdown();
}

void DrainLoop::RunOnce(int poll_ms) {
  int64_t now = options_.clock->MonotonicMillis();
  MaybeReopenWal(now);
  ReplaceProducerIfFatal(now);
  RecycleProducerIfQuiet(now);
  ExpireOld(now);
  read_any_ = Refill(now);
  PollReconciler(now);
  ProduceDue(now);
  std::vector<DeliveryReport>& reports = polled_;  // its capacity kept from pass to pass
  reports.clear();
  if (producer_) {
    // Block in the client only while it has work whose reports we wait for.
    producer_->Poll(read_any_ || window_.empty() ? 0 : poll_ms, &reports);
  }
  now = options_.clock->MonotonicMillis();
  HandleReports(reports, now);
  if (in_doubt_.RoundsDue()) AskRoundsDue();  // one request per topic for this poll's suspects
  SettleFinished(now, /*all=*/false);
  brokers_up_.store(producer_ ? producer_->BrokersUp() : 0);
  if (now >= next_commit_update_ms_) {
    UpdateCommitPoint();
    UpdateStuck(now);
    next_commit_update_ms_ = now + static_cast<int64_t>(options_.commit_point_interval_ms);
  }
  KSPOOL_DCHECK_OK(CheckInvariants());
}

void DrainLoop::MaybeReopenWal(int64_t now) {
  if (!wal_->health().ok() && now >= next_reopen_ms_) {
    next_reopen_ms_ = now + static_cast<int64_t>(options_.wal_reopen_interval_ms);
    if (absl::Status s = wal_->Reopen(); !s.ok()) {
      spdlog::warn("wal: still failing, Sends are refused until it reopens: {}", s.ToString());
      Degraded("wal_reopen_failed");
    } else {
      if (wal_->GetStats().reserve_missing) {
        spdlog::warn("wal: reopened after a write error, in the room of its reserve: Sends are "
                     "refused (no_reserve) until the volume has room for the reserve again");
      } else {
        spdlog::warn("wal: reopened after a write error; accepting Sends again");
      }
      if (options_.metrics) options_.metrics->WalReopened();
    }
  }
  // Entries of a failed append may have come back below the cursor: read again from
  // where the failed writes began (the reader skips what the window already holds).
  // Not from the head: a backlog of a stuck topic would be passed over again at every
  // reopen, scan_max_keys keys a pass, while newer entries of every topic wait behind
  // it (drain_sim seed 231783182910: 11 reopens, an entry 34 s old still unread).
  // A topic's entries left unread below that point stay its own to catch up on.
  if (const uint64_t reopens = wal_->reopens();
      !reader_.Seen(reopens) && reader_.Reopened(reopens, wal_->rescan_from())) {
    const uint64_t cursor = reader_.cursor();
    for (auto& [topic, ts] : topics_) {
      if (ts.unread_from == 0) continue;
      if (cursor == 0 || ts.unread_from >= cursor) {
        ts.ClearUnread();  // the reader meets them all again
      } else {
        ts.scan_from = std::min(ts.scan_from, cursor);
      }
    }
  }
}

void DrainLoop::SettleFinished(int64_t now, bool all) {
  if (!all && now < next_settle_ms_) return;
  // The window's iterators stay valid until the batch is settled: nothing else enters or
  // leaves the window meanwhile, so the settled entries are erased without a lookup.
  // Both vectors keep their capacity from one settle to the next (at most the window's
  // slots): a settle every few milliseconds would otherwise allocate them anew each time.
  std::vector<wal::Outcome>& batch = settle_batch_;
  std::vector<Window::iterator>& taken = settle_taken_;
  batch.clear();
  taken.clear();
  batch.reserve(finished_.size());  // every finished slot is listed there (CheckInvariants)
  taken.reserve(finished_.size());
  auto take = [&](Window::iterator it) {
    it->second.batched = true;
    batch.push_back(TakeOutcome(it->first, it->second));
    taken.push_back(it);
  };
  auto prefix_end = window_.begin();
  for (; prefix_end != window_.end() && prefix_end->second.state == Slot::kSettling; ++prefix_end) {
    take(prefix_end);
  }
  // Every slot below this one is in the batch now: finished_'s entries below it are in
  // the batch or no longer in the window, and need no lookup.
  const uint64_t prefix_below = prefix_end == window_.end() ? UINT64_MAX : prefix_end->first;
  // finished_'s entries before `passed` are in the batch or settled already.
  size_t passed = 0;
  Window::iterator w = window_.end();
  for (uint64_t seq : finished_) {
    if (seq < prefix_below) {
      ++passed;
      continue;
    }
    w = window_.FindNear(seq, w);  // finished_ is mostly in sequence order too
    if (w != window_.end() && !w->second.batched) {
      if (!all && now - w->second.finished_ms < static_cast<int64_t>(options_.settle_delay_ms)) {
        break;  // later ones finished later still
      }
      take(w);
    }
    ++passed;
  }
  if (batch.empty()) return;
  TakeLowerOffsets(passed, &batch, &taken);
  HoldWatermarks(&batch);
  next_settle_ms_ = now + static_cast<int64_t>(options_.settle_interval_ms);
  absl::Status s = wal_->Settle(batch);
  if (!s.ok()) {
    // The entries stay in the window and are settled on a later round. Whoever waits
    // for these outcomes hears of them now, once: the WAL may not reopen soon.
    if (options_.outcomes) TellNotSettled(batch, s);
    for (size_t k = 0; k < taken.size(); ++k) {
      taken[k]->second.batched = false;
      StoreOutcome(taken[k]->first, taken[k]->second, std::move(batch[k]));
    }
    batch.clear();
    taken.clear();
    Degraded("settle_failed");
    if (now - last_settle_error_log_ms_ > 5000) {
      spdlog::warn("drain: removing finished entries from the WAL failed, will retry: {}",
                   s.ToString());
      last_settle_error_log_ms_ = now;
    }
    return;
  }
  if (options_.outcomes) {
    // The listener hears of outcomes without their records (a discard's is in the dead
    // letters now).
    for (wal::Outcome& o : batch) {
      if (!o.raw.empty()) std::string().swap(o.raw);
    }
    options_.outcomes->Settled(batch);
  }
  if (!told_not_settled_.empty()) {
    for (const wal::Outcome& o : batch) told_not_settled_.erase(o.seq);
  }
  // Batches hold thousands of entries of a few topics: look each topic up once per run.
  TopicState* ts = nullptr;
  std::string_view ts_name;
  for (Window::iterator it : taken) {
    const std::string& topic = it->second.entry.record.topic;
    if (!ts || topic != ts_name) {
      auto t = topics_.try_emplace(topic).first;
      ts = &t->second;
      ts_name = t->first;
    }
    in_doubt_.Settled(it->first);
    window_.Erase(it, ts->window);
  }
  batch.clear();
  taken.clear();
  finished_.erase(finished_.begin(), finished_.begin() + static_cast<std::ptrdiff_t>(passed));
  while (!finished_.empty() && !window_.count(finished_.front())) finished_.pop_front();
  inflight_.store(window_.size());
}

void DrainLoop::TakeLowerOffsets(size_t from, std::vector<wal::Outcome>* batch,
                                 std::vector<Window::iterator>* taken) {
  // A partition's offsets follow the order entries were produced in, not their sequence
  // numbers (its keyed and unkeyed lanes go out independently), so an entry finished
  // after the prefix may lie below an offset the batch settles. Settled alone, that
  // offset would raise the partition's watermark above a delivered entry not settled yet,
  // and after a crash the restart reading from the watermark would not find that copy.
  // Keys own their topic: pushing onto the batch moves its outcomes.
  std::map<std::pair<std::string, int32_t>, int64_t> highest;
  // A batch is made of long runs of one partition's outcomes: one lookup per run.
  const wal::Outcome* run = nullptr;
  int64_t* run_highest = nullptr;
  for (const wal::Outcome& o : *batch) {
    if (!o.delivered() || o.offset < 0) continue;
    if (!run || o.partition != run->partition || o.topic != run->topic) {
      run = &o;
      run_highest = &highest[{o.topic, o.partition}];
    }
    *run_highest = std::max(*run_highest, o.offset);
  }
  if (highest.empty()) return;
  Window::iterator w = window_.end();
  for (auto f = finished_.begin() + static_cast<std::ptrdiff_t>(from); f != finished_.end(); ++f) {
    w = window_.FindNear(*f, w);
    if (w == window_.end() || w->second.batched || w->second.state != Slot::kSettling) continue;
    const Slot& s = w->second;
    if (s.outcome && !s.outcome->delivered()) continue;
    const std::string& topic = s.outcome ? s.outcome->topic : s.entry.record.topic;
    const int32_t partition = s.outcome ? s.outcome->partition : s.delivered.partition;
    const int64_t offset = s.outcome ? s.outcome->offset : s.delivered.offset;
    auto h = highest.find(std::make_pair(topic, partition));
    if (h == highest.end() || offset > h->second) continue;
    w->second.batched = true;
    batch->push_back(TakeOutcome(w->first, w->second));
    taken->push_back(w);
  }
}

void DrainLoop::TellNotSettled(const std::vector<wal::Outcome>& batch, const absl::Status& error) {
  std::vector<wal::Outcome> untold;
  for (const wal::Outcome& o : batch) {
    if (!told_not_settled_.insert(o.seq).second) continue;
    wal::Outcome& u = untold.emplace_back();
    u.seq = o.seq;
    u.state = o.state;
    u.topic = o.topic;
    u.partition = o.partition;
    u.offset = o.offset;
    u.time_ms = o.time_ms;
    u.discard_reason = o.discard_reason;
    u.error = o.error;
  }
  if (!untold.empty()) options_.outcomes->NotSettled(untold, error);
}

void DrainLoop::UpdateCommitPoint() {
  if (window_.undecodable() > 0) return;  // an entry's receive time is unknown: hold the point
  // A topic's first slot in sequence order is its oldest in the window, so the walk ends
  // once it has met every topic that has slots (their charges count them; CheckInvariants).
  size_t topics_left = 0;
  for (const auto& [topic, ts] : topics_) topics_left += ts.window.messages() > 0 ? 1 : 0;
  std::map<std::string, int64_t> oldest;
  std::string_view last;  // a key of `oldest`: runs of one topic skip the map
  for (auto it = window_.begin(); it != window_.end() && topics_left > 0; ++it) {
    const wal::Record& r = it->second.entry.record;
    if (!oldest.empty() && r.topic == last) continue;
    auto [o, fresh] = oldest.try_emplace(r.topic, r.receive_time_ms);
    last = o->first;
    if (fresh) --topics_left;
  }
  // Entries skipped for lack of room are below the cursor but not in the window.
  for (const auto& [topic, ts] : topics_) {
    if (ts.unread_from == 0) continue;
    auto [it, fresh] = oldest.try_emplace(topic, ts.unread_receive_ms);
    if (!fresh) it->second = std::min(it->second, ts.unread_receive_ms);
  }
  if (absl::Status s = tracker_->Update(reader_.cursor(), oldest); !s.ok()) {
    spdlog::warn("commit point: update failed, keeping the last one: {}", s.ToString());
    Degraded("commit_point_failed");
  }
}

std::vector<StuckTopic> DrainLoop::Stuck() const {
  MutexLock l(&stuck_mu_);
  return stuck_;
}

void DrainLoop::UpdateStuck(int64_t now) {
  std::vector<StuckTopic> stuck;
  for (auto it = topics_.begin(); it != topics_.end();) {
    TopicState& ts = it->second;
    if (ts.idle() && !ts.gate.holding) {
      if (ts.reported_stuck) spdlog::info("drain: topic '{}' is drained again", it->first);
      it = topics_.erase(it);  // what is tracked is bounded by the topics with work
      continue;
    }
    if (ts.pending_since_ms == 0) ts.pending_since_ms = now;
    const int64_t since = std::max(ts.pending_since_ms, ts.last_delivery_ms);
    if (now - since >= static_cast<int64_t>(options_.stuck_after_ms)) {
      StuckTopic st{it->first, (now - since) / 1000.0, ts.window.messages(), {}};
      std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(it->first);
      for (int32_t p = 0; p < layout->partition_count(); ++p) {
        if (!layout->HasLeader(p)) st.leaderless_partitions.push_back(p);
      }
      if (!ts.reported_stuck) {
        spdlog::warn(
            "drain: topic '{}' has had {} entries waiting and no delivery for {:.0f} s"
            "{}",
            it->first, ts.window.messages(), st.stuck_seconds,
            st.leaderless_partitions.empty() ? "" : "; partitions without a leader");
        Degraded("topic_stuck");
        ts.reported_stuck = true;
      }
      stuck.push_back(std::move(st));
    } else if (ts.reported_stuck) {
      spdlog::info("drain: topic '{}' delivers again", it->first);
      ts.reported_stuck = false;
    }
    ++it;
  }
  MutexLock l(&stuck_mu_);
  stuck_ = std::move(stuck);
}

}  // namespace kspool::agent
