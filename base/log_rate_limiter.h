// LogRateLimiter: lets at most `burst` log lines through per `window_ms`, so that a
// client that can trigger a line per request cannot fill the disk or drown the agent's
// other lines. The lines refused are counted and handed to the next one admitted, which
// says "N more suppressed".
// Thread safety: Admit() may be called from any thread.
#pragma once

#include <cstdint>

#include "base/mutex.h"

namespace kspool {

class LogRateLimiter {
 public:
  LogRateLimiter(int burst, int64_t window_ms) : burst_(burst), window_ms_(window_ms) {}
  // True if the line at `now_mono_ms` (a monotonic clock) may be logged; then
  // `*suppressed` is the number of lines refused since the last admitted one.
  bool Admit(int64_t now_mono_ms, uint64_t* suppressed);

 private:
  const int burst_;
  const int64_t window_ms_;
  Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  int64_t window_start_ ABSL_GUARDED_BY(mu_) = 0;
  int in_window_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kspool
