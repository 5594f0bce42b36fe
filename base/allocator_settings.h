// The C library allocator's settings for the agent's process, made once at start.
//
// Fast bins off (glibc's mallopt M_MXFAST = 0). The drain frees and allocates its
// window's entries in bursts of thousands (a settle, then a read), far more than glibc's
// per-thread cache keeps, so freed small blocks pile up in the fast bins, and every large
// request (RocksDB's 64 KiB block reads, a settle's batch) first merges them all back
// (malloc_consolidate, ~7% of the drain thread in a profile of its drain phase). Without
// fast bins a block is merged as it is freed. Peer benchmark A/B, 4 rounds
// (docs/PERFORMANCE.md): Bruce TCP rate x1.06 (1.01-1.11), gRPC batched unchanged.
//
// An operator's GLIBC_TUNABLES that sets glibc.malloc.mxfast wins: it is left alone.
// Other C libraries: nothing is done. Thread safety: call before other threads start.
#pragma once

namespace kspool {

// True when it changed the setting.
bool ConfigureAllocator();

}  // namespace kspool
