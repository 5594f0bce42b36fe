// WaitUntil: how tests wait for something that happens in another thread or process:
// poll a condition until it holds or a deadline passes (never a bare sleep).
#pragma once

#include <chrono>
#include <thread>

namespace kspool::testing {

// Polls `cond` every `every` until it returns true (true) or `timeout` has passed (then
// it is asked once more, and its answer returned).
template <typename Cond>
bool WaitUntil(Cond&& cond, std::chrono::milliseconds timeout,
               std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(every);
  }
  return cond();
}

}  // namespace kspool::testing
