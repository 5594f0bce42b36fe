// PeriodicThread: runs a task on a thread of its own, once per interval, until Stop().
// The interval is waited on a condition variable (steady clock), so Stop() ends a wait
// at once; a task already running is let finish. Used by the agent's periodic tasks
// (heartbeats, WAL maintenance).
// Thread safety: Start and Stop from the owner; the task runs on the thread only.
// Ownership: the task must stay valid until Stop() returns (the destructor calls it).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "base/mutex.h"

namespace kspool {

class PeriodicThread {
 public:
  PeriodicThread() = default;
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Starts the thread, named `name` (at most 15 characters are kept): it waits
  // `interval`, runs `task`, waits again, and so on. At most one Start per instance.
  void Start(std::string name, std::chrono::milliseconds interval, std::function<void()> task);
  // Wakes the thread and joins it. Idempotent; a no-op if never started.
  void Stop();

 private:
  std::thread thread_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kspool
