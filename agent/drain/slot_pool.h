// SlotPool: the memory of the drain window's map nodes, blocks of one size in slabs of
// kBlocksPerSlab. A block is handed out lowest first (lowest slab, then lowest block in
// it), so slots admitted in sequence order, as the reader admits them, lie in address
// order once the settle has freed the blocks below them: a walk of the window reads
// memory forward, which the hardware prefetches, instead of following nodes to wherever
// the general allocator had put them.
//
// Memory: the blocks live at the peak, rounded up to slabs (the window bounds them),
// plus one free slab kept against churn; a slab whose blocks are all free is otherwise
// given back at once. Requests of another size than the first (none from a std::map)
// go to operator new.
// Thread safety: none, the drain loop's thread. Ownership: blocks must be freed before
// the pool is destroyed (declare it before the container that uses it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <set>
#include <vector>

namespace kspool::agent {

class SlotPool {
 public:
  static constexpr size_t kBlocksPerSlab = 512;

  SlotPool() = default;
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;

  void* Allocate(size_t size);
  void Free(void* p, size_t size);

  size_t live_blocks() const { return live_; }
  size_t slabs_held() const;  // slabs with memory

 private:
  struct Slab {
    std::unique_ptr<std::byte[]> memory;  // null while given back
    uint64_t free_bits[kBlocksPerSlab / 64] = {};
    uint32_t free_count = 0;
  };
  // Each block starts with its slab's index; the caller's bytes follow at kHeader.
  static constexpr size_t kHeader = alignof(std::max_align_t);

  void Materialize(uint32_t index);
  void Release(uint32_t index);  // gives the slab's memory back

  size_t size_ = 0;    // the callers' block size, fixed by the first Allocate
  size_t stride_ = 0;  // kHeader + size_, rounded up to kHeader
  std::vector<Slab> slabs_;
  std::set<uint32_t> with_room_;  // slabs with a free block, or given back
  size_t live_ = 0;
  uint32_t spare_ = UINT32_MAX;  // the one all-free slab kept, if any
};

// A std::allocator-compatible handle on a SlotPool, for std::map's nodes.
template <class T>
class SlotPoolAllocator {
 public:
  using value_type = T;
  explicit SlotPoolAllocator(SlotPool* pool) : pool_(pool) {}
  template <class U>
  SlotPoolAllocator(const SlotPoolAllocator<U>& other) : pool_(other.pool()) {}  // NOLINT

  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(pool_->Allocate(sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    pool_->Free(p, sizeof(T));
  }
  SlotPool* pool() const { return pool_; }
  template <class U>
  bool operator==(const SlotPoolAllocator<U>& o) const {
    return pool_ == o.pool();
  }
  template <class U>
  bool operator!=(const SlotPoolAllocator<U>& o) const {
    return pool_ != o.pool();
  }

 private:
  SlotPool* pool_;
};

}  // namespace kspool::agent
