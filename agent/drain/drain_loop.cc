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
      settler_(wal, {options.settle_delay_ms, options.settle_interval_ms, options.outcomes}),
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
      if (ts.unread.from == 0) continue;
      if (cursor == 0 || ts.unread.from >= cursor) {
        ts.unread.Clear();  // the reader meets them all again
      } else {
        ts.unread.scan_from = std::min(ts.unread.scan_from, cursor);
      }
    }
  }
}

void DrainLoop::SettleFinished(int64_t now, bool all) {
  // Batches hold thousands of entries of a few topics: look each topic up once per run.
  TopicState* ts = nullptr;
  std::string_view ts_name;
  absl::Status s = settler_.Settle(
      window_, now, all, [this](std::vector<wal::Outcome>* batch) { HoldWatermarks(batch); },
      [&](Window::iterator it) {
        const std::string& topic = it->second.entry.record.topic;
        if (!ts || topic != ts_name) {
          auto t = topics_.try_emplace(topic).first;
          ts = &t->second;
          ts_name = t->first;
        }
        in_doubt_.Settled(it->first);
        window_.Erase(it, ts->window);
      });
  inflight_.store(window_.size());
  if (s.ok()) return;
  Degraded("settle_failed");
  if (now - last_settle_error_log_ms_ > 5000) {
    spdlog::warn("drain: removing finished entries from the WAL failed, will retry: {}",
                 s.ToString());
    last_settle_error_log_ms_ = now;
  }
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
    if (ts.unread.from == 0) continue;
    auto [it, fresh] = oldest.try_emplace(topic, ts.unread.receive_ms);
    if (!fresh) it->second = std::min(it->second, ts.unread.receive_ms);
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
      if (ts.pace.reported_stuck) spdlog::info("drain: topic '{}' is drained again", it->first);
      it = topics_.erase(it);  // what is tracked is bounded by the topics with work
      continue;
    }
    if (ts.pace.pending_since_ms == 0) ts.pace.pending_since_ms = now;
    const int64_t since = std::max(ts.pace.pending_since_ms, ts.pace.last_delivery_ms);
    if (now - since >= static_cast<int64_t>(options_.stuck_after_ms)) {
      StuckTopic st{it->first, (now - since) / 1000.0, ts.window.messages(), {}};
      std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(it->first);
      for (int32_t p = 0; p < layout->partition_count(); ++p) {
        if (!layout->HasLeader(p)) st.leaderless_partitions.push_back(p);
      }
      if (!ts.pace.reported_stuck) {
        spdlog::warn(
            "drain: topic '{}' has had {} entries waiting and no delivery for {:.0f} s"
            "{}",
            it->first, ts.window.messages(), st.stuck_seconds,
            st.leaderless_partitions.empty() ? "" : "; partitions without a leader");
        Degraded("topic_stuck");
        ts.pace.reported_stuck = true;
      }
      stuck.push_back(std::move(st));
    } else if (ts.pace.reported_stuck) {
      spdlog::info("drain: topic '{}' delivers again", it->first);
      ts.pace.reported_stuck = false;
    }
    ++it;
  }
  MutexLock l(&stuck_mu_);
  stuck_ = std::move(stuck);
}

}  // namespace kspool::agent
