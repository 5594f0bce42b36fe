#include "agent/api/request_memory_budget.h"

#include <string>

namespace kspool::agent {

void RequestMemoryBudget::Lease::Release() {
  if (budget_ == nullptr) return;
  budget_->in_use_.fetch_sub(bytes_, std::memory_order_relaxed);
  budget_ = nullptr;
}

void RequestMemoryBudget::Lease::Resize(uint64_t bytes) {
  if (budget_ == nullptr) return;
  if (bytes >= bytes_) {
    budget_->in_use_.fetch_add(bytes - bytes_, std::memory_order_relaxed);
  } else {
    budget_->in_use_.fetch_sub(bytes_ - bytes, std::memory_order_relaxed);
  }
  bytes_ = bytes;
}

absl::StatusOr<RequestMemoryBudget::Lease> RequestMemoryBudget::Charge(uint64_t bytes) {
  uint64_t used = in_use_.load(std::memory_order_relaxed);
  do {
    // `bytes > bound_ - used` rather than `used + bytes > bound_`: no overflow.
    if (bound_ != 0 && (used > bound_ || bytes > bound_ - used)) {
      return absl::ResourceExhaustedError(what_ + " full (" + std::to_string(used) + " of " +
                                          std::to_string(bound_) + " bytes in use; the request needs " +
                                          std::to_string(bytes) + ")");
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return Lease(this, bytes);
}

}  // namespace kspool::agent
