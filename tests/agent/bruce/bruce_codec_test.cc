// The Bruce/Dory input decoder against messages written from the format's documentation
// (tests/support/bruce_format.h): each layout, each reason for refusing, sizes at the
// bounds, Size fields that lie, and PartitionKey's partition choice.
#include "agent/bruce/bruce_codec.h"

#include <gtest/gtest.h>

#include "tests/support/bruce_format.h"

namespace kspool::agent {
namespace {

using kspool::testing::AnyPartition;
using kspool::testing::BruceFields;
using kspool::testing::BruceMessageBytes;
using kspool::testing::PartitionKey;

constexpr size_t kMax = 64 << 10;

BruceReject ReasonOf(const std::string& bytes, size_t max = kMax) {
  absl::StatusOr<BruceMessage> m = DecodeBruceMessage(bytes, max);
  EXPECT_FALSE(m.ok());
  return BruceRejectReason(m.status());
}

TEST(BruceCodec, DecodesAnAnyPartitionMessage) {
  const std::string bytes = AnyPartition("orders", 1700000000123, "k1", "hello");
  EXPECT_EQ(bytes.size(), kBruceAnyPartitionOverhead + 6 + 2 + 5);
  absl::StatusOr<BruceMessage> m = DecodeBruceMessage(bytes, kMax);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->partition_key.has_value());
  EXPECT_EQ(m->topic, "orders");
  EXPECT_EQ(m->timestamp_ms, 1700000000123);
  EXPECT_EQ(m->key, "k1");
  EXPECT_EQ(m->value, "hello");
}

TEST(BruceCodec, DecodesAPartitionKeyMessage) {
  const std::string bytes = PartitionKey(-7, "t", 42, "", "v");
  EXPECT_EQ(bytes.size(), kBrucePartitionKeyOverhead + 1 + 0 + 1);
  absl::StatusOr<BruceMessage> m = DecodeBruceMessage(bytes, kMax);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->partition_key, -7);
  EXPECT_EQ(m->topic, "t");
  EXPECT_EQ(m->timestamp_ms, 42);
  EXPECT_TRUE(m->key.empty());
  EXPECT_EQ(m->value, "v");
}

TEST(BruceCodec, AcceptsEmptyKeyAndEmptyValue) {
  absl::StatusOr<BruceMessage> m = DecodeBruceMessage(AnyPartition("t", 0, "", ""), kMax);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->key.empty());
  EXPECT_TRUE(m->value.empty());
}

TEST(BruceCodec, RefusesAnUnknownApiKey) {
  BruceFields f{258, 0, 0, std::nullopt, "t", 0, "", "v", std::nullopt};
  EXPECT_EQ(ReasonOf(BruceMessageBytes(f)), BruceReject::kUnsupportedApiKey);
}

TEST(BruceCodec, RefusesAnUnknownApiVersionOfEitherKey) {
  EXPECT_EQ(ReasonOf(BruceMessageBytes({256, 1, 0, std::nullopt, "t", 0, "", "v", {}})),
            BruceReject::kUnsupportedVersion);
  EXPECT_EQ(ReasonOf(BruceMessageBytes({257, 2, 0, 5, "t", 0, "", "v", {}})),
            BruceReject::kUnsupportedVersion);
}

TEST(BruceCodec, RefusesNonZeroFlagsAsMalformed) {
  EXPECT_EQ(ReasonOf(BruceMessageBytes({256, 0, 1, std::nullopt, "t", 0, "", "v", {}})),
            BruceReject::kMalformed);
}

TEST(BruceCodec, RefusesAnEmptyTopicAsMalformed) {
  EXPECT_EQ(ReasonOf(AnyPartition("", 0, "", "v")), BruceReject::kMalformed);
}

TEST(BruceCodec, RefusesATopicKafkaWouldRefuseAsBadTopic) {
  EXPECT_EQ(ReasonOf(AnyPartition("a b", 0, "", "v")), BruceReject::kBadTopic);
  EXPECT_EQ(ReasonOf(AnyPartition("..", 0, "", "v")), BruceReject::kBadTopic);
  EXPECT_EQ(ReasonOf(AnyPartition(std::string(250, 'x'), 0, "", "v")), BruceReject::kBadTopic);
  EXPECT_TRUE(DecodeBruceMessage(AnyPartition(std::string(249, 'x'), 0, "", "v"), kMax).ok());
}

TEST(BruceCodec, RefusesAMessageAboveTheLimitAsTooLongAndTakesOneAtIt) {
  const std::string at = AnyPartition("t", 0, "", std::string(100, 'v'));
  EXPECT_TRUE(DecodeBruceMessage(at, at.size()).ok());
  EXPECT_EQ(ReasonOf(at, at.size() - 1), BruceReject::kTooLong);
}

TEST(BruceCodec, RefusesASizeFieldThatLies) {
  BruceFields f{256, 0, 0, std::nullopt, "t", 0, "k", "v", {}};
  const size_t real = BruceMessageBytes(f).size();
  for (int32_t lie : {static_cast<int32_t>(real) - 1, static_cast<int32_t>(real) + 1, 0, -1}) {
    f.size_override = lie;
    EXPECT_EQ(ReasonOf(BruceMessageBytes(f)), BruceReject::kMalformed) << lie;
  }
}

TEST(BruceCodec, RefusesKeyOrValueSizesThatPointPastTheEnd) {
  std::string bytes = AnyPartition("t", 0, "key", "value");
  // KeySize sits after Size(4) ApiKey(2) ApiVersion(2) Flags(2) TopicSize(2) "t" Timestamp(8).
  const size_t key_size_at = 4 + 2 + 2 + 2 + 2 + 1 + 8;
  bytes[key_size_at + 3] = 100;
  EXPECT_EQ(ReasonOf(bytes), BruceReject::kMalformed);
  std::string neg = AnyPartition("t", 0, "key", "value");
  neg[key_size_at] = static_cast<char>(0xff);  // KeySize < 0
  EXPECT_EQ(ReasonOf(neg), BruceReject::kMalformed);
}

TEST(BruceCodec, RefusesBytesAfterTheValue) {
  std::string bytes = AnyPartition("t", 0, "", "v");
  bytes[3] = static_cast<char>(bytes[3] + 1);  // Size counts one more byte
  bytes.push_back('x');
  EXPECT_EQ(ReasonOf(bytes), BruceReject::kMalformed);
}

TEST(BruceCodec, RefusesEveryTruncationOfAValidMessage) {
  const std::string full = PartitionKey(3, "topic", 5, "key", "value");
  for (size_t n = 0; n < full.size(); ++n) {
    std::string cut = full.substr(0, n);
    EXPECT_EQ(ReasonOf(cut), BruceReject::kMalformed) << n;
  }
}

TEST(BruceCodec, FrameSizeReadsTheSizeFieldWithinBounds) {
  const std::string bytes = AnyPartition("t", 0, "", "v");
  absl::StatusOr<size_t> size = BruceFrameSize(bytes, kMax);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, bytes.size());
}

TEST(BruceCodec, FrameSizeRefusesASizeBelowTheHeaderAsMalformed) {
  for (int32_t s : {-5, 0, 7}) {
    std::string prefix;
    kspool::testing::PutBE(&prefix, static_cast<uint32_t>(s), 4);
    absl::StatusOr<size_t> size = BruceFrameSize(prefix, kMax);
    ASSERT_FALSE(size.ok());
    EXPECT_EQ(BruceRejectReason(size.status()), BruceReject::kMalformed) << s;
  }
}

TEST(BruceCodec, FrameSizeRefusesASizeAboveTheLimitAsTooLong) {
  std::string prefix;
  kspool::testing::PutBE(&prefix, kBruceDefaultMaxStreamBytes + 1, 4);
  absl::StatusOr<size_t> size = BruceFrameSize(prefix, kBruceDefaultMaxStreamBytes);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(BruceRejectReason(size.status()), BruceReject::kTooLong);
  prefix.clear();
  kspool::testing::PutBE(&prefix, kBruceDefaultMaxStreamBytes, 4);
  EXPECT_TRUE(BruceFrameSize(prefix, kBruceDefaultMaxStreamBytes).ok());
}

TEST(BruceCodec, PartitionKeyIsTheKeyAsUnsigned32BitsModuloTheCount) {
  EXPECT_EQ(BrucePartitionFor(0, 3), 0);
  EXPECT_EQ(BrucePartitionFor(7, 3), 1);
  EXPECT_EQ(BrucePartitionFor(INT32_MAX, 5), static_cast<int32_t>(2147483647u % 5));
  // Negative keys are read as uint32: -1 is 4294967295.
  EXPECT_EQ(BrucePartitionFor(-1, 3), static_cast<int32_t>(4294967295u % 3));
  EXPECT_EQ(BrucePartitionFor(-1, 7), static_cast<int32_t>(4294967295u % 7));
  EXPECT_EQ(BrucePartitionFor(INT32_MIN, 3), static_cast<int32_t>(2147483648u % 3));
  EXPECT_EQ(BrucePartitionFor(5, 1), 0);
  EXPECT_EQ(BrucePartitionFor(5, 0), -1);
}

TEST(BruceCodec, EveryReasonHasItsOwnName) {
  std::set<std::string_view> names;
  for (BruceReject r : kAllBruceRejects) names.insert(BruceRejectName(r));
  EXPECT_EQ(names,
            (std::set<std::string_view>{"malformed", "unsupported_api_key", "unsupported_version",
                                        "bad_topic", "too_long", "unclean_disconnect"}));
  for (BruceReject r : kAllBruceRejects) {
    EXPECT_EQ(BruceRejectReason(BruceError(r, "x")), r);
  }
}

}  // namespace
}  // namespace kspool::agent
