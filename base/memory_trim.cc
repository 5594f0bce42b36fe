#include "base/memory_trim.h"

#include <malloc.h>

#include <atomic>

namespace kspool {
namespace {

std::atomic<uint64_t> released{0};

}  // namespace

void NoteLargeRelease(uint64_t bytes) { released.fetch_add(bytes, std::memory_order_relaxed); }

bool TrimFreedMemory() {
  if (released.load(std::memory_order_relaxed) < kTrimAfterBytes) return false;
  released.store(0, std::memory_order_relaxed);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return true;
}

}  // namespace kspool
