// SlotPool: blocks handed out lowest first, so that a map filled in key order after a
// prefix was freed lies in address order; memory held bounded by the live blocks.
#include "agent/drain/slot_pool.h"

#include <gtest/gtest.h>
#include <sanitizer/asan_interface.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kspool::agent {
namespace {

struct Node {
  char bytes[440];
};

TEST(SlotPool, FreedLowBlocksAreHandedOutBeforeHigherOnes) {
  SlotPool pool;
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(pool.Allocate(sizeof(Node)));
  // Free the first 300 (a settle), then allocate 300 again (a read): they come back in
  // the order of their addresses, from the lowest.
  for (int i = 0; i < 300; ++i) pool.Free(blocks[i], sizeof(Node));
  std::vector<void*> again;
  for (int i = 0; i < 300; ++i) again.push_back(pool.Allocate(sizeof(Node)));
  for (int i = 0; i < 300; ++i) EXPECT_EQ(again[i], blocks[i]) << i;
  for (void* b : again) pool.Free(b, sizeof(Node));
  for (int i = 300; i < 1000; ++i) pool.Free(blocks[i], sizeof(Node));
  EXPECT_EQ(pool.live_blocks(), 0u);
}

TEST(SlotPool, AllFreeSlabsAreGivenBackButOne) {
  SlotPool pool;
  std::vector<void*> blocks;
  for (size_t i = 0; i < 4 * SlotPool::kBlocksPerSlab; ++i) {
    blocks.push_back(pool.Allocate(sizeof(Node)));
  }
  EXPECT_EQ(pool.slabs_held(), 4u);
  // One block left in the last slab pins only that slab.
  for (size_t i = 0; i + 1 < blocks.size(); ++i) pool.Free(blocks[i], sizeof(Node));
  EXPECT_EQ(pool.slabs_held(), 2u) << "the last slab, and one spare";
  EXPECT_EQ(pool.live_blocks(), 1u);
  // The next blocks come from the spare (the lowest slab with room), not a new one.
  void* b = pool.Allocate(sizeof(Node));
  EXPECT_EQ(b, blocks[0]);
  EXPECT_EQ(pool.slabs_held(), 2u);
  pool.Free(b, sizeof(Node));
  pool.Free(blocks.back(), sizeof(Node));
  EXPECT_EQ(pool.slabs_held(), 1u);
}

TEST(SlotPool, AMapWalkedInKeyOrderReadsAscendingAddressesAfterASettle) {
  SlotPool pool;
  using Map = std::map<uint64_t, Node, std::less<uint64_t>,
                       SlotPoolAllocator<std::pair<const uint64_t, Node>>>;
  Map window{Map::key_compare(), Map::allocator_type(&pool)};
  // A window in steady state: settle the lowest 500, read 500 more, a few rounds.
  uint64_t next = 0;
  for (int i = 0; i < 2000; ++i) window.try_emplace(next++);
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 500; ++i) window.erase(window.begin());
    for (int i = 0; i < 500; ++i) window.try_emplace(window.end(), next++);
  }
  ASSERT_EQ(pool.live_blocks(), 2000u);
  // Within a slab, the nodes of consecutive keys lie at ascending addresses.
  size_t ascending = 0, steps = 0;
  const Node* prev = nullptr;
  for (const auto& [key, node] : window) {
    if (prev) {
      ++steps;
      ascending += &node > prev ? 1 : 0;
    }
    prev = &node;
  }
  EXPECT_GE(ascending, steps - steps / 50) << ascending << " of " << steps;
  window.clear();
  EXPECT_EQ(pool.live_blocks(), 0u);
}

#if defined(__SANITIZE_ADDRESS__)
// A dangling window iterator must still be a use after free to ASan.
TEST(SlotPool, FreedBlocksArePoisonedForAsan) {
  SlotPool pool;
  void* a = pool.Allocate(sizeof(Node));
  EXPECT_FALSE(__asan_address_is_poisoned(a));
  pool.Free(a, sizeof(Node));
  EXPECT_TRUE(__asan_address_is_poisoned(a));
  EXPECT_TRUE(__asan_address_is_poisoned(static_cast<char*>(a) + sizeof(Node) - 1));
}
#endif

TEST(SlotPool, OtherSizesGoToTheGeneralAllocator) {
  SlotPool pool;
  void* a = pool.Allocate(sizeof(Node));
  void* b = pool.Allocate(16);
  EXPECT_EQ(pool.live_blocks(), 1u);
  pool.Free(b, 16);
  pool.Free(a, sizeof(Node));
  EXPECT_EQ(pool.live_blocks(), 0u);
}

}  // namespace
}  // namespace kspool::agent
