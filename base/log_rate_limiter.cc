#include "base/log_rate_limiter.h"

namespace kspool {

bool LogRateLimiter::Admit(int64_t now_mono_ms, uint64_t* suppressed) {
  MutexLock lock(&mu_);
  if (!started_ || now_mono_ms - window_start_ >= window_ms_) {
    started_ = true;
    window_start_ = now_mono_ms;
    in_window_ = 0;
  }
  if (in_window_ >= burst_) {
    ++suppressed_;
    return false;
  }
  ++in_window_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace kspool
