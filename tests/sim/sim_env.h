// BackgroundJobsEnv: a RocksDB Env that counts the background jobs (flushes,
// compactions, file purges) RocksDB schedules on its thread pools, so that the drain
// simulator can wait for them to finish at fixed points of a step. Without that, a
// seeded replay diverged: a compaction still running or already done changed which
// table-file reads a scan made, so an injected read fault (FailReadsOnThisThread: skip
// n reads, fail the next) hit another read, or none (seeds 108 and 19462442724 of
// "all" gave two digests in a few runs).
// Thread safety: Schedule and the jobs run on RocksDB's threads; WaitIdle on the
// simulation's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "rocksdb/env.h"

namespace kspool::sim {

class BackgroundJobsEnv : public rocksdb::EnvWrapper {
 public:
  explicit BackgroundJobsEnv(std::shared_ptr<rocksdb::Env> base)
      : EnvWrapper(base.get()), base_(std::move(base)) {}

  void Schedule(void (*f)(void*), void* a, Priority pri, void* tag = nullptr,
                void (*u)(void*) = nullptr) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++pending_;
    }
    EnvWrapper::Schedule(&RunJob, new Job{this, f, a, u}, pri, tag, &DropJob);
  }

  // Waits until no scheduled job is queued or running; false after `timeout`.
  bool WaitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return idle_.wait_for(l, timeout, [&] { return pending_ == 0; });
  }

 private:
  struct Job {
    BackgroundJobsEnv* env;
    void (*run)(void*);
    void* arg;
    void (*unschedule)(void*);
  };
  static void RunJob(void* p) {
    auto* job = static_cast<Job*>(p);
    job->run(job->arg);
    job->env->Done(job);
  }
  static void DropJob(void* p) {  // taken off the queue by UnSchedule
    auto* job = static_cast<Job*>(p);
    if (job->unschedule) job->unschedule(job->arg);
    job->env->Done(job);
  }
  void Done(Job* job) {
    delete job;
    std::lock_guard<std::mutex> l(mu_);
    if (--pending_ == 0) idle_.notify_all();
  }

  const std::shared_ptr<rocksdb::Env> base_;
  std::mutex mu_;
  std::condition_variable idle_;
  int pending_ = 0;
};

}  // namespace kspool::sim
