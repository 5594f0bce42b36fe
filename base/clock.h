// Clock seam: every time the WAL and the agent read goes through a Clock, so tests can
// move time, or jump the wall clock while the monotonic clock goes on.
// The wall clock is for receive times and commit points only; intervals, deadlines and
// backoffs use the monotonic clock, so a wall-clock step changes nothing else
// (ARCHITECTURE.md invariant 8). Implementations must be thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace kspool {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in milliseconds since the Unix epoch. May go backwards.
  virtual int64_t NowMillis() = 0;
  // Milliseconds since an arbitrary origin; never goes backwards, unaffected by steps
  // of the wall clock.
  virtual int64_t MonotonicMillis() = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowMillis() override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
  int64_t MonotonicMillis() override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  }
  // A process-wide instance; never destroyed.
  static Clock* Default() {
    static SystemClock* clock = new SystemClock();
    return clock;
  }
};

// A clock that tests set by hand. Advance() moves both clocks, as time passing does;
// Set() steps the wall clock alone, as an NTP step or an operator does.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t NowMillis() override { return now_ms_.load(); }
  int64_t MonotonicMillis() override { return mono_ms_.load(); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms); }
  void Advance(int64_t delta_ms) {
    now_ms_.fetch_add(delta_ms);
    mono_ms_.fetch_add(delta_ms);
  }

 private:
  std::atomic<int64_t> now_ms_;
  std::atomic<int64_t> mono_ms_{1'000'000};
};

}  // namespace kspool
