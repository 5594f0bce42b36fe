// StopSignals: turns SIGINT and SIGTERM into a call of `on_stop` on a thread of its own
// (a signal handler may not call into gRPC; TryCancel is not async-signal-safe).
// Construct it before any other thread exists (before the first gRPC channel): it
// blocks both signals in the calling thread, and threads started later inherit that,
// so only its own thread receives them. A second signal exits the process at once
// (128 + signal number), in case the first stop hangs. The destructor restores nothing: the process
// is about to exit.
// Thread safety: construct and destroy on the main thread; `on_stop` runs on another.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace kspool::ctl {

class StopSignals {
 public:
  explicit StopSignals(std::function<void()> on_stop);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Whether a SIGINT or SIGTERM arrived (on_stop then ran, or is running).
  bool stopped() const { return stopped_; }

 private:
  std::function<void()> on_stop_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> done_{false};
  std::thread waiter_;
};

}  // namespace kspool::ctl
