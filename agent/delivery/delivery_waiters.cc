#include "agent/delivery/delivery_waiters.h"

#include <pthread.h>

#include <algorithm>

namespace kspool::agent {

DeliveryWaiters::DeliveryWaiters(Clock* clock) : clock_(clock) {}

DeliveryWaiters::~DeliveryWaiters() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  if (expiry_.joinable()) expiry_.join();
  Close();
  std::vector<Done> left;  // reservations whose append never answered
  {
    MutexLock l(&mu_);
    for (auto& [id, w] : waiters_) left.push_back(std::move(w->done));
    waiters_.clear();
  }
  for (Done& d : left) std::move(d)(absl::CancelledError("the agent is stopping"), {});
}

void DeliveryWaiters::Close() {
  std::vector<Done> closed;
  {
    MutexLock l(&mu_);
    closed_ = true;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      Waiter& w = *it->second;
      const Id id = (it++)->first;
      if (!w.assigned) continue;
      closed.push_back(std::move(w.done));
      RemoveLocked(id, w);
    }
  }
  for (Done& d : closed) std::move(d)(absl::UnavailableError("the agent is stopping"), {});
}

void DeliveryWaiters::StartExpiry() {
  expiry_ = std::thread([this] { ExpiryLoop(); });
}

DeliveryWaiters::Id DeliveryWaiters::Reserve(Done done) {
  auto w = std::make_unique<Waiter>();
  w->done = std::move(done);
  MutexLock l(&mu_);
  const Id id = next_id_++;
  w->reserved_tick = tick_;
  open_reservations_.insert(tick_);
  waiters_.emplace(id, std::move(w));
  active_.fetch_add(1);
  return id;
}

bool DeliveryWaiters::Fill(Waiter& w, const wal::Outcome& o) {
  if (!w.assigned || o.seq < w.first || o.seq - w.first >= w.got.size()) return false;
  if (!w.got.Set(o.seq - w.first, o)) return false;  // the first outcome stands
  return --w.remaining == 0;
}

void DeliveryWaiters::Assign(Id id, uint64_t first_seq, size_t n, int64_t deadline_mono_ms) {
  Done done;
  absl::Status status;
  std::vector<wal::Outcome> got;
  {
    MutexLock l(&mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;  // cancelled meanwhile
    Waiter& w = *it->second;
    open_reservations_.erase(open_reservations_.find(w.reserved_tick));
    w.assigned = true;
    w.first = first_seq;
    w.remaining = n;
    w.got.Reset(n);
    bool complete = n == 0;
    for (const Kept& k : kept_) complete = Fill(w, k.outcome) || complete;
    PruneKeptLocked();
    if (!complete && !closed_) {
      by_first_seq_.emplace(first_seq, id);
      if (deadline_mono_ms > 0) {
        w.deadline = deadline_mono_ms;
        const bool earliest = deadlines_.empty() || deadline_mono_ms < deadlines_.begin()->first;
        deadlines_.emplace(deadline_mono_ms, id);
        if (earliest) wake_.Signal();
      }
      return;
    }
    if (complete) {
      got = w.got.Expand(w.first);
    } else {
      status = absl::UnavailableError("the agent is stopping");
    }
    done = std::move(w.done);
    RemoveLocked(id, w);
  }
  std::move(done)(std::move(status), std::move(got));
}

void DeliveryWaiters::Abandon(Id id) {
  MutexLock l(&mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  RemoveLocked(id, *it->second);
  PruneKeptLocked();
}

void DeliveryWaiters::Cancel(Id id) {
  Done done;
  {
    MutexLock l(&mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    done = std::move(it->second->done);
    RemoveLocked(id, *it->second);
    PruneKeptLocked();
  }
  std::move(done)(absl::CancelledError("the call was cancelled"), {});
}

void DeliveryWaiters::Resolve(const std::vector<wal::Outcome>& outcomes) {
  if (active_.load() == 0 || outcomes.empty()) return;
  std::vector<std::pair<Done, std::vector<wal::Outcome>>> completed;
  {
    MutexLock l(&mu_);
    const uint64_t tick = ++tick_;
    for (const wal::Outcome& o : outcomes) {
      auto it = by_first_seq_.upper_bound(o.seq);
      Waiter* w = nullptr;
      Id id = 0;
      if (it != by_first_seq_.begin()) {
        id = std::prev(it)->second;
        w = waiters_.at(id).get();
        if (o.seq - w->first >= w->got.size()) w = nullptr;
      }
      if (w == nullptr) {
        // Perhaps the outcome of a reservation still waiting for its append's answer.
        if (!open_reservations_.empty()) kept_.push_back({tick, o});
        continue;
      }
      if (Fill(*w, o)) {
        completed.emplace_back(std::move(w->done), w->got.Expand(w->first));
        RemoveLocked(id, *w);
      }
    }
  }
  for (auto& [done, got] : completed) std::move(done)(absl::OkStatus(), std::move(got));
}

void DeliveryWaiters::ExpireDue(int64_t now_mono_ms) {
  std::vector<Done> expired;
  {
    MutexLock l(&mu_);
    while (!deadlines_.empty() && deadlines_.begin()->first <= now_mono_ms) {
      const Id id = deadlines_.begin()->second;
      auto it = waiters_.find(id);
      expired.push_back(std::move(it->second->done));
      RemoveLocked(id, *it->second);
    }
    PruneKeptLocked();
  }
  for (Done& d : expired) {
    std::move(d)(absl::DeadlineExceededError("no outcome for every message before the deadline"),
                 {});
  }
}

void DeliveryWaiters::RemoveLocked(Id id, Waiter& w) {
  if (w.assigned) {
    by_first_seq_.erase(w.first);
  } else {
    open_reservations_.erase(open_reservations_.find(w.reserved_tick));
  }
  if (w.deadline > 0) {
    auto [lo, hi] = deadlines_.equal_range(w.deadline);
    for (auto d = lo; d != hi; ++d) {
      if (d->second == id) {
        deadlines_.erase(d);
        break;
      }
    }
  }
  waiters_.erase(id);  // destroys `w`
  active_.fetch_sub(1);
}

void DeliveryWaiters::PruneKeptLocked() {
  // An outcome settled at tick t belongs to no reservation made at tick t or later.
  if (open_reservations_.empty()) {
    kept_.clear();
    return;
  }
  const uint64_t oldest = *open_reservations_.begin();
  while (!kept_.empty() && kept_.front().tick <= oldest) kept_.pop_front();
}

size_t DeliveryWaiters::waiting() const {
  MutexLock l(&mu_);
  return waiters_.size();
}

size_t DeliveryWaiters::kept_outcomes() const {
  MutexLock l(&mu_);
  return kept_.size();
}

void DeliveryWaiters::ExpiryLoop() {
  pthread_setname_np(pthread_self(), "kspool-waiters");
  while (true) {
    int64_t wait_ms = 1000;
    {
      MutexLock l(&mu_);
      if (stopping_) return;
      if (!deadlines_.empty()) {
        wait_ms =
            std::clamp<int64_t>(deadlines_.begin()->first - clock_->MonotonicMillis(), 0, 1000);
      }
      if (wait_ms > 0) wake_.WaitFor(&mu_, std::chrono::milliseconds(wait_ms));
      if (stopping_) return;
    }
    ExpireDue(clock_->MonotonicMillis());
  }
}

}  // namespace kspool::agent
