#include "tools/ctl/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace kspool::ctl {
namespace {

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

StopSignals::StopSignals(std::function<void()> on_stop) : on_stop_(std::move(on_stop)) {
  const sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  waiter_ = std::thread([this, set] {
    int sig = 0;
    while (sigwait(&set, &sig) == 0) {
      // The destructor wakes this thread with a SIGTERM of its own after setting done_.
      if (done_) return;
      // A second signal means the first one's stop did not end things: exit at once.
      if (stopped_.exchange(true)) _exit(128 + sig);
      on_stop_();
    }
  });
}

StopSignals::~StopSignals() {
  done_ = true;
  pthread_kill(waiter_.native_handle(), SIGTERM);
  waiter_.join();
}

}  // namespace kspool::ctl
