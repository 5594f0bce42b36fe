// Clock seam: every time the WAL and the agent read goes through a Clock, so tests can
// move time, or jump it backwards. Implementations must be thread-safe.
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
};

class SystemClock final : public Clock {
 public:
  int64_t NowMillis() override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
  // A process-wide instance; never destroyed.
  static Clock* Default() {
    static SystemClock* clock = new SystemClock();
    return clock;
  }
};

// A clock that tests set by hand.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t now_ms) : now_ms_(now_ms) {}
  int64_t NowMillis() override { return now_ms_.load(); }
  void Set(int64_t now_ms) { now_ms_.store(now_ms); }
  void Advance(int64_t delta_ms) { now_ms_.fetch_add(delta_ms); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace kspool
