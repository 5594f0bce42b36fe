#include "agent/drain/slot_pool.h"

#include <sanitizer/asan_interface.h>

#include <cstring>

#include "base/check.h"

namespace kspool::agent {

size_t SlotPool::slabs_held() const {
  size_t n = 0;
  for (const Slab& s : slabs_) n += s.memory ? 1 : 0;
  return n;
}

SlotPool::~SlotPool() {
  for (uint32_t i = 0; i < slabs_.size(); ++i) Release(i);
}

void SlotPool::Release(uint32_t index) {
  Slab& s = slabs_[index];
  if (!s.memory) return;
  ASAN_UNPOISON_MEMORY_REGION(s.memory.get(), stride_ * kBlocksPerSlab + kHeader);
  s.memory.reset();
}

void SlotPool::Materialize(uint32_t index) {
  Slab& s = slabs_[index];
  s.memory.reset(new std::byte[stride_ * kBlocksPerSlab + kHeader]);
  std::memset(s.free_bits, 0xff, sizeof(s.free_bits));
  s.free_count = kBlocksPerSlab;
  // Under ASan a free block is poisoned, so that a dangling window iterator is still
  // caught as a use after free (no-ops in other builds).
  ASAN_POISON_MEMORY_REGION(s.memory.get(), stride_ * kBlocksPerSlab + kHeader);
}

void* SlotPool::Allocate(size_t size) {
  if (size_ == 0) {
    size_ = size;
    stride_ = (kHeader + size + kHeader - 1) / kHeader * kHeader;
  }
  if (size != size_) return ::operator new(size);
  if (with_room_.empty()) {
    slabs_.emplace_back();
    with_room_.insert(static_cast<uint32_t>(slabs_.size() - 1));
  }
  const uint32_t index = *with_room_.begin();
  Slab& s = slabs_[index];
  if (!s.memory) Materialize(index);
  if (spare_ == index) spare_ = UINT32_MAX;
  size_t word = 0;
  while (s.free_bits[word] == 0) ++word;  // free_count > 0: some bit is set
  const size_t bit = static_cast<size_t>(__builtin_ctzll(s.free_bits[word]));
  s.free_bits[word] &= ~(uint64_t{1} << bit);
  if (--s.free_count == 0) with_room_.erase(with_room_.begin());
  ++live_;
  // The slab's memory is aligned for any type (new[] of bytes); each block is a multiple
  // of kHeader from it.
  std::byte* block = s.memory.get() + (word * 64 + bit) * stride_;
  ASAN_UNPOISON_MEMORY_REGION(block, kHeader + size_);
  std::memcpy(block, &index, sizeof(index));
  return block + kHeader;
}

void SlotPool::Free(void* p, size_t size) {
  if (size != size_) return ::operator delete(p);
  std::byte* block = static_cast<std::byte*>(p) - kHeader;
  uint32_t index;
  std::memcpy(&index, block, sizeof(index));
  KSPOOL_DCHECK(index < slabs_.size() && slabs_[index].memory);
  Slab& s = slabs_[index];
  const size_t k = static_cast<size_t>(block - s.memory.get()) / stride_;
  KSPOOL_DCHECK(k < kBlocksPerSlab && !(s.free_bits[k / 64] & (uint64_t{1} << (k % 64))));
  s.free_bits[k / 64] |= uint64_t{1} << (k % 64);
  ASAN_POISON_MEMORY_REGION(p, size_);
  if (s.free_count++ == 0) with_room_.insert(index);
  --live_;
  if (s.free_count < kBlocksPerSlab) return;
  // All free: the spare if it is the lowest all-free slab (the next to be taken), and
  // the other given back. A slab given back stays listed in with_room_: it is made again
  // before a new index is added.
  if (spare_ == UINT32_MAX) {
    spare_ = index;
  } else if (index < spare_) {
    Release(spare_);
    spare_ = index;
  } else {
    Release(index);
  }
}

}  // namespace kspool::agent
