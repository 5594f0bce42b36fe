#include "base/token_bucket.h"

#include <algorithm>
#include <cmath>

namespace kspool {

TokenBucket::TokenBucket(double rate_per_s, double burst, int64_t now_ms)
    : rate_(rate_per_s), burst_(burst), tokens_(burst), last_ms_(now_ms) {}

void TokenBucket::Refill(int64_t now_ms) {
  if (now_ms <= last_ms_) return;  // no time passed, or it went back: nothing to add
  tokens_ = std::min(burst_, tokens_ + rate_ * static_cast<double>(now_ms - last_ms_) / 1000.0);
  last_ms_ = now_ms;
}

double TokenBucket::tokens(int64_t now_ms) {
  Refill(now_ms);
  return tokens_;
}

int64_t TokenBucket::Wait(double n, int64_t now_ms) {
  Refill(now_ms);
  // More than a burst needs a full bucket (then it goes into debt).
  const double need = std::min(n, burst_);
  if (tokens_ >= need) return 0;
  const double ms = std::ceil((need - tokens_) * 1000.0 / rate_);
  // Time that went back: the refill starts again only once it passes last_ms_.
  const int64_t behind = std::max<int64_t>(0, last_ms_ - now_ms);
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(ms, 1e12)) + behind);
}

int64_t TokenBucket::Take(double n, int64_t now_ms) {
  const int64_t wait = Wait(n, now_ms);
  if (wait == 0) TakeNow(n);
  return wait;
}

}  // namespace kspool
