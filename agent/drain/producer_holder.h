// ProducerHolder: the drain's producer and its life (issue 42's split of the drain): the
// factory that makes one, the current one (none while a replacement waits out its
// backoff), the backoff after losses in a row, and the counts of replacements (after a
// fatal error) and recycles (at a quiet moment, to give back what a client keeps per
// topic name). What happens to the window's entries when a producer goes is the
// drain's (drain_producer_life.cc); this owns only the producer.
//
// Guarantees: a producer lost again at once is never replaced in a tight loop (the n-th
// loss in a row waits backoff_ms * 2^(n-1), at most backoff_max_ms); a delivery resets
// the count. Thread safety: the drain's loop thread owns it; replaced() and recycled()
// may be read from any thread (the metrics).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/drain/producer.h"

namespace kspool::agent {

using ProducerFactory = std::function<absl::StatusOr<std::unique_ptr<Producer>>()>;

class ProducerHolder {
 public:
  ProducerHolder(ProducerFactory factory, uint64_t backoff_ms, uint64_t backoff_max_ms)
      : factory_(std::move(factory)), backoff_ms_(backoff_ms), backoff_max_ms_(backoff_max_ms) {}

  Producer* get() const { return producer_.get(); }
  Producer* operator->() const { return producer_.get(); }
  explicit operator bool() const { return producer_ != nullptr; }

  // The first producer, at the drain's start.
  [[nodiscard]] absl::Status Create() { return Make(); }
  // While none is in place: whether its backoff has passed.
  bool ReplacementDue(int64_t now) const { return !producer_ && now >= next_attempt_ms_; }
  // Makes the replacement (counted as one); on failure the caller Drop()s again.
  [[nodiscard]] absl::Status Replace() {
    absl::Status s = Make();
    if (s.ok()) replaced_.fetch_add(1);
    return s;
  }
  // Gives the current producer up (none may be in place: its replacement failed), and
  // sets when the next may be made.
  void Drop(int64_t now) {
    producer_.reset();
    uint64_t backoff = backoff_ms_;
    for (int i = 0; i < losses_ && backoff < backoff_max_ms_; ++i) backoff *= 2;
    ++losses_;
    next_attempt_ms_ = now + static_cast<int64_t>(std::min(backoff, backoff_max_ms_));
  }
  // A delivery succeeded: the next loss waits backoff_ms again.
  void Delivered() { losses_ = 0; }

  // Whether a recycle may be tried now: at least `min_interval_ms` after the last try.
  bool RecycleAllowed(int64_t now, uint64_t min_interval_ms) const {
    return last_recycle_ms_ == 0 || now - last_recycle_ms_ >= static_cast<int64_t>(min_interval_ms);
  }
  // Puts a new producer in place of the current one. On failure the current one stays
  // and the next try waits the interval too.
  [[nodiscard]] absl::Status Recycle(int64_t now) {
    last_recycle_ms_ = now;
    absl::Status s = Make();
    if (s.ok()) recycled_.fetch_add(1);
    return s;
  }
  // At the drain's stop.
  void Reset() { producer_.reset(); }

  uint64_t replaced() const { return replaced_.load(); }
  uint64_t recycled() const { return recycled_.load(); }

 private:
  absl::Status Make() {
    absl::StatusOr<std::unique_ptr<Producer>> p = factory_();
    if (!p.ok()) return p.status();
    producer_ = std::move(p).value();
    return absl::OkStatus();
  }

  const ProducerFactory factory_;
  const uint64_t backoff_ms_;
  const uint64_t backoff_max_ms_;
  std::unique_ptr<Producer> producer_;
  int64_t next_attempt_ms_ = 0;  // while none is in place
  int losses_ = 0;               // in a row
  int64_t last_recycle_ms_ = 0;
  std::atomic<uint64_t> replaced_{0};
  std::atomic<uint64_t> recycled_{0};
};

}  // namespace kspool::agent
