#include "base/periodic_thread.h"

#include <pthread.h>

#include <utility>

namespace kspool {

void PeriodicThread::Start(std::string name, std::chrono::milliseconds interval,
                           std::function<void()> task) {
  thread_ = std::thread([this, name = std::move(name), interval, task = std::move(task)] {
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    MutexLock l(&mu_);
    while (!stop_) {
      cv_.WaitFor(&mu_, interval);
      if (stop_) break;
      mu_.Unlock();
      task();
      mu_.Lock();
    }
  });
}

void PeriodicThread::Stop() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace kspool
