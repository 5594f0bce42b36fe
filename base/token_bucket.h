// TokenBucket: a rate limit of `rate` units per second with bursts of up to `burst`
// units, on a monotonic time the caller passes in (pure: unit-tested with any clock).
//
// A request takes n units all or nothing. One larger than the burst is let through when
// the bucket is full and leaves it in debt (negative), which the following requests
// wait for: a caller sending 10,000-message batches against 1,000 msg/s gets 1,000
// msg/s, not 1,000 batches. Refused, it is told how long until it would be let through.
// Time that goes backwards (a caller's clock, or a bug) adds nothing and takes nothing:
// the bucket then waits until time passes its last refill again.
// Thread safety: none; the owner locks.
#pragma once

#include <cstdint>

namespace kspool {

class TokenBucket {
 public:
  // rate > 0, burst > 0; starts full at `now_ms`.
  TokenBucket(double rate_per_s, double burst, int64_t now_ms);

  // 0 if `n` units were taken at `now_ms`; else the milliseconds (>= 1) until they
  // would be, and nothing is taken.
  int64_t Take(double n, int64_t now_ms);
  // Taken only if Wait(n) == 0 for each of several buckets: see Take.
  int64_t Wait(double n, int64_t now_ms);
  void TakeNow(double n) { tokens_ -= n; }  // after Wait(n, now) == 0

  double tokens(int64_t now_ms);  // refilled to now_ms
  bool full(int64_t now_ms) { return tokens(now_ms) >= burst_; }
  double rate() const { return rate_; }
  double burst() const { return burst_; }

 private:
  void Refill(int64_t now_ms);

  double rate_;
  double burst_;
  double tokens_;
  int64_t last_ms_;
};

}  // namespace kspool
