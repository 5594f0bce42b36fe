#include "agent/delivery/delivery_feed.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace kspool::agent {

DeliveryFeed::DeliveryFeed(wal::DeliveryQueries* wal) : wal_(wal) {}

DeliveryFeed::~DeliveryFeed() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  Close();
}

void DeliveryFeed::Close() {
  std::map<uint64_t, Watcher> left;
  {
    MutexLock l(&mu_);
    closed_ = true;
    left.swap(watchers_);
    count_.store(0);
  }
  for (auto& [id, w] : left) w.sink->End(absl::UnavailableError("the agent is stopping"));
}

void DeliveryFeed::Start() {
  thread_ = std::thread([this] { Run(); });
}

uint64_t DeliveryFeed::Add(uint64_t from_seq, std::shared_ptr<Sink> sink) {
  MutexLock l(&mu_);
  const uint64_t id = next_id_++;
  if (closed_) {
    mu_.Unlock();
    sink->End(absl::UnavailableError("the agent is stopping"));
    mu_.Lock();
    return id;
  }
  Watcher& w = watchers_[id];
  w.sink = std::move(sink);
  w.position = from_seq;
  count_.fetch_add(1);
  wake_.Signal();
  return id;
}

void DeliveryFeed::Ready(uint64_t id) {
  MutexLock l(&mu_);
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return;
  it->second.ready = true;
  wake_.Signal();
}

void DeliveryFeed::Remove(uint64_t id) {
  MutexLock l(&mu_);
  if (watchers_.erase(id) > 0) count_.fetch_sub(1);
}

void DeliveryFeed::Notify() {
  if (count_.load() == 0) return;
  MutexLock l(&mu_);
  ++generation_;
  wake_.Signal();
}

size_t DeliveryFeed::watchers() const { return count_.load(); }

void DeliveryFeed::Run() {
  pthread_setname_np(pthread_self(), "kspool-feed");
  MutexLock l(&mu_);
  while (!stopping_) {
    std::vector<uint64_t> due;
    for (const auto& [id, w] : watchers_) {
      if (w.ready && w.read_generation < generation_) due.push_back(id);
    }
    if (due.empty()) {
      // Also a backstop: a settle that happened without a Notify() is found within 1 s.
      wake_.WaitFor(&mu_, std::chrono::milliseconds(1000));
      ++generation_;
      continue;
    }
    for (uint64_t id : due) {
      if (stopping_) break;
      Serve(id);
    }
  }
}

void DeliveryFeed::Serve(uint64_t id) {
  auto it = watchers_.find(id);
  if (it == watchers_.end() || !it->second.ready) return;
  const uint64_t from = it->second.position;
  const uint64_t generation = generation_;
  std::shared_ptr<Sink> sink = it->second.sink;
  std::vector<wal::Outcome> batch;
  uint64_t next = from;
  mu_.Unlock();
  absl::Status s = wal_->ScanDeliveries(from, kBatch, &batch, &next);
  mu_.Lock();
  it = watchers_.find(id);
  if (it == watchers_.end()) return;  // removed meanwhile
  Watcher& w = it->second;
  if (!s.ok()) {
    watchers_.erase(it);
    count_.fetch_sub(1);
    mu_.Unlock();
    if (!absl::IsOutOfRange(s))
      spdlog::warn("delivery feed: reading the delivery index: {}", s.ToString());
    sink->End(s);
    mu_.Lock();
    return;
  }
  w.position = next;
  if (batch.empty()) {
    w.read_generation = generation;  // caught up as of this generation
    return;
  }
  w.ready = false;
  mu_.Unlock();
  sink->Deliver(std::move(batch));
  mu_.Lock();
}

}  // namespace kspool::agent
