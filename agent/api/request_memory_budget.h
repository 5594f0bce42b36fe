// RequestMemoryBudget: a bound on bytes clients make the agent hold, charged before they
// are spent. The service keeps two: one for parsed Send and Broadcast requests (a
// request is charged its size from before it is parsed until its WAL append completes;
// a Broadcast also its encoded copies, one per partition; the WAL then holds its own
// encoded copy, bounded by --max-append-queue-bytes), and one for the state of waiting
// WAIT_FOR_KAFKA Sends (--max-waiting-memory). A charge that would exceed the bound is
// refused, and the request answered RESOURCE_EXHAUSTED, so a flood of large requests
// cannot grow the agent without bound.
// Thread safety: every method may be called from any thread (one atomic counter).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace kspool::agent {

class RequestMemoryBudget {
 public:
  // A charge; gives its bytes back when destroyed. Movable, not copyable.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : budget_(std::exchange(o.budget_, nullptr)), bytes_(o.bytes_) {}
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) {
        Release();
        budget_ = std::exchange(o.budget_, nullptr);
        bytes_ = o.bytes_;
      }
      return *this;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Release(); }
    uint64_t bytes() const { return budget_ ? bytes_ : 0; }
    // Makes the charge `bytes`, also past the bound: for what is already built and cannot
    // be refused (an answer measured once it exists, against the estimate charged before
    // the request was taken). The next Charge() sees the excess. No-op on an empty lease.
    void Resize(uint64_t bytes);

   private:
    friend class RequestMemoryBudget;
    Lease(RequestMemoryBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    void Release();
    RequestMemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // `bound_bytes` 0: no bound (use is still counted). `what` names it in refusals.
  explicit RequestMemoryBudget(uint64_t bound_bytes, std::string what = "receive memory")
      : bound_(bound_bytes), what_(std::move(what)) {}
  // The budget must outlive its leases.
  RequestMemoryBudget(const RequestMemoryBudget&) = delete;
  RequestMemoryBudget& operator=(const RequestMemoryBudget&) = delete;

  // Charges `bytes`, or RESOURCE_EXHAUSTED "<what> full (N of M bytes in use; ...)"
  // when in_use() + bytes would exceed the bound (nothing is charged then).
  [[nodiscard]] absl::StatusOr<Lease> Charge(uint64_t bytes);

  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t bound() const { return bound_; }

 private:
  const uint64_t bound_;
  const std::string what_;
  std::atomic<uint64_t> in_use_{0};
};

}  // namespace kspool::agent
