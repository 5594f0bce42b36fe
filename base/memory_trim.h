// Handing freed memory back to the system after large releases. glibc keeps freed
// memory in its arenas (and, once a large block was freed, serves the next large ones
// from the heap too), so the RSS of a process that briefly held a few hundred MB stays
// there unless malloc_trim() is called. Callers note what they released
// (NoteLargeRelease); a periodic thread calls TrimFreedMemory(), which trims only when
// at least kTrimAfterBytes were released since the last trim: malloc_trim stalls other
// threads' allocations while it walks the arenas, so it is not done per release.
// Thread safety: both functions may be called from any thread (one atomic counter).
#pragma once

#include <cstdint>

namespace kspool {

inline constexpr uint64_t kTrimAfterBytes = 8ull << 20;

// `bytes` were (or are about to be) freed.
void NoteLargeRelease(uint64_t bytes);
// Trims when kTrimAfterBytes or more were noted since the last trim; true if it did.
bool TrimFreedMemory();

}  // namespace kspool
