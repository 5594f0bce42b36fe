// KeyPartition: keyed entries land where Kafka's other producers put them (the Java
// client's murmur2 partitioner), computed in the drain without a Kafka client.
#include <gtest/gtest.h>

#include <string>

#include "agent/drain/drain_lanes.h"

namespace kspool::agent {
namespace {

TEST(KeyPartition, Murmur2MatchesTheJavaClient) {
  // Kafka's UtilsTest.testMurmur2 (the Java client's values, as signed ints).
  EXPECT_EQ(static_cast<int32_t>(Murmur2("21")), -973932308);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("foobar")), -790332482);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("a-little-bit-long-string")), -985981536);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("a-little-bit-longer-string")), -1486304829);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8")),
            -58897971);
  EXPECT_EQ(static_cast<int32_t>(Murmur2("abc")), 479470107);
}

TEST(KeyPartition, IsThePositiveHashModuloThePartitionCount) {
  // -973932308 & 0x7fffffff = 1173551340.
  EXPECT_EQ(KeyPartition("21", 1), 0);
  EXPECT_EQ(KeyPartition("21", 7), 1173551340 % 7);
  EXPECT_EQ(KeyPartition("21", 1000), 340);
  for (int n = 1; n <= 64; ++n) {
    for (int i = 0; i < 100; ++i) {
      const int32_t p = KeyPartition("key-" + std::to_string(i), n);
      EXPECT_GE(p, 0);
      EXPECT_LT(p, n);
    }
  }
}

}  // namespace
}  // namespace kspool::agent
