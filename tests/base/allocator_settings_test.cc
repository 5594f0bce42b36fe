// ConfigureAllocator: after it, freed small blocks no longer go to glibc's fast bins.
// Sanitizer builds replace the allocator, so there is no glibc allocator to look at.
#include "base/allocator_settings.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <vector>

namespace kspool {
namespace {

#if defined(__GLIBC__) && !defined(KSPOOL_SANITIZED)
// Bytes the fast bins gained while 256 small blocks were freed (more than glibc's
// per-thread cache keeps of one size).
long FastBinBytesGainedByFrees() {
  std::vector<void*> blocks(256);
  for (void*& b : blocks) b = std::malloc(40);
  const long before = static_cast<long>(mallinfo2().fsmblks);
  for (void* b : blocks) std::free(b);
  return static_cast<long>(mallinfo2().fsmblks) - before;
}

TEST(AllocatorSettings, FreedSmallBlocksSkipTheFastBins) {
  ASSERT_GT(FastBinBytesGainedByFrees(), 0) << "glibc's default keeps them in fast bins";
  EXPECT_TRUE(ConfigureAllocator());
  EXPECT_LE(FastBinBytesGainedByFrees(), 0);
}
#endif

}  // namespace
}  // namespace kspool
