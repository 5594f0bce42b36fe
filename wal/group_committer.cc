#include "wal/group_committer.h"

#include <pthread.h>

#include <chrono>
#include <string>

namespace kspool::wal {

void GroupCommitter::Start(Mutex* mu, Sink* sink) {
  mu_ = mu;
  sink_ = sink;
  thread_ = std::thread([this] { Run(); });
}

void GroupCommitter::Stop() {
  if (!mu_) {
    stopping_ = true;  // never started: no thread shares the state
    return;
  }
  {
    MutexLock l(mu_);
    stopping_ = true;
    work_cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status GroupCommitter::Enqueue([[maybe_unused]] Mutex* mu, AppendBatch& batch,
                                     AppendCallback& done) {
  if (stopping_) return absl::UnavailableError("WAL is closing");
  const uint64_t bytes = batch.bytes();
  if (limits_.max_queue_bytes > 0 && bytes > limits_.max_queue_bytes) {
    // Alone it would overfill the queue: admitting it into an empty queue would let one
    // request make the agent hold any number of bytes, twice (the batch, its write).
    return absl::ResourceExhaustedError(
        "request too large for the append queue: its encoded batch has " +
        std::to_string(bytes) + " bytes, more than --max-append-queue-bytes " +
        std::to_string(limits_.max_queue_bytes) +
        "; it can never be queued: send fewer or smaller messages per request");
  }
  if (limits_.max_queue_bytes > 0 && queued_bytes_ + bytes > limits_.max_queue_bytes) {
    return absl::ResourceExhaustedError(
        "append queue full: " + std::to_string(queued_bytes_) + " bytes wait for the disk (limit " +
        std::to_string(limits_.max_queue_bytes) + ", --max-append-queue-bytes), the request has " +
        std::to_string(bytes) + "; retry shortly");
  }
  queued_bytes_ += bytes;
  queue_.push_back(Writer{std::move(batch), std::move(done), {}, {}});
  if (!gathering_ || GroupFull()) work_cv_.Signal();
  return absl::OkStatus();
}

GroupCommitter::Writer* GroupCommitter::NextForGroup([[maybe_unused]] Mutex* mu, Group* group) {
  if (group->examined >= queue_.size()) return nullptr;
  Writer* w = &queue_[group->examined];
  if (group->writers.size() >= limits_.max_group_requests ||
      (!group->writers.empty() && group->bytes + w->batch.bytes() > limits_.max_group_bytes)) {
    return nullptr;
  }
  ++group->examined;
  return w;
}

void GroupCommitter::Run() {
  pthread_setname_np(pthread_self(), "kspool-walsync");
  mu_->Lock();
  while (true) {
    while (queue_.empty() && !stopping_) work_cv_.Wait(mu_);
    if (queue_.empty()) break;
    if (limits_.group_commit_delay_us > 0) GatherGroup();
    // The group stays in the queue while it is written, so that idle() sees it:
    // sequence numbers commit in order.
    const size_t examined = sink_->CommitGroup();
    std::vector<Writer> finished;
    finished.reserve(examined);
    for (size_t i = 0; i < examined; ++i) {
      queued_bytes_ -= queue_.front().batch.bytes();
      finished.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    // Callbacks run without the lock: they may call back into the WAL. Appends queued
    // meanwhile form the next group.
    mu_->Unlock();
    // Outcomes are moved, not copied, into the callbacks: an error's rep is shared with
    // the WAL's sticky error, and absl releases reps inside its (uninstrumented) library,
    // so a copy freed here on this thread would be a race TSan cannot see through.
    for (Writer& w : finished) {
      if (w.status.ok()) {
        std::move(w.done)(std::move(w.result));
      } else {
        std::move(w.done)(std::move(w.status));
      }
    }
    finished.clear();
    mu_->Lock();
  }
  mu_->Unlock();
}

void GroupCommitter::GatherGroup() {
  using std::chrono::steady_clock;
  const steady_clock::time_point deadline =
      steady_clock::now() + std::chrono::microseconds(limits_.group_commit_delay_us);
  gathering_ = true;
  while (!stopping_ && sink_->Accepting() && !GroupFull()) {
    const steady_clock::time_point now = steady_clock::now();
    if (now >= deadline) break;
    work_cv_.WaitFor(mu_, std::chrono::duration_cast<std::chrono::microseconds>(deadline - now) +
                              std::chrono::microseconds(1));
  }
  gathering_ = false;
}

}  // namespace kspool::wal
