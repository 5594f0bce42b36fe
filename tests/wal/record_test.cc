#include "wal/record.h"

#include <gtest/gtest.h>

namespace kspool::wal {
namespace {

Record Sample() {
  Record r;
  r.topic = "orders";
  r.partition = 3;
  r.key = std::string("k\0ey", 4);
  r.value = std::string(300, 'v');
  r.headers = {{"h", "1"}, {"h", "2"}, {"empty", ""}};
  r.client_timestamp_ms = 1700000000123;
  r.receive_time_ms = 1700000000456;
  return r;
}

TEST(RecordCodec, RoundTripKeepsEveryField) {
  Record r = Sample();
  absl::StatusOr<Record> back = DecodeRecord(EncodeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->topic, r.topic);
  EXPECT_EQ(back->partition, 3);
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->value, r.value);
  EXPECT_EQ(back->headers, r.headers);
  EXPECT_EQ(back->client_timestamp_ms, r.client_timestamp_ms);
  EXPECT_EQ(back->receive_time_ms, r.receive_time_ms);
}

TEST(RecordCodec, EmptyKeyDiffersFromNoKey) {
  Record r = Sample();
  r.key = std::string();
  EXPECT_EQ(DecodeRecord(EncodeRecord(r))->key, std::optional<std::string>(""));
  r.key.reset();
  r.partition = -1;
  r.client_timestamp_ms.reset();
  absl::StatusOr<Record> back = DecodeRecord(EncodeRecord(r));
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->key.has_value());
  EXPECT_EQ(back->partition, -1);
  EXPECT_FALSE(back->client_timestamp_ms.has_value());
}

TEST(RecordCodec, FlippedByteIsDataLoss) {
  std::string bytes = EncodeRecord(Sample());
  for (size_t i = 1; i < bytes.size(); i += 7) {
    std::string bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_EQ(DecodeRecord(bad).status().code(), absl::StatusCode::kDataLoss) << "byte " << i;
  }
}

TEST(RecordCodec, UnknownVersionIsRefused) {
  std::string bytes = EncodeRecord(Sample());
  bytes[0] = 2;
  absl::Status s = DecodeRecord(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("version 2"), std::string::npos) << s;
}

TEST(RecordCodec, TruncatedRecordIsDataLoss) {
  std::string bytes = EncodeRecord(Sample());
  for (size_t n : {0ul, 5ul, 12ul, bytes.size() - 1}) {
    EXPECT_EQ(DecodeRecord(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(RecordCodec, PeekReadsReceiveTime) {
  EXPECT_EQ(*PeekReceiveTime(EncodeRecord(Sample())), 1700000000456);
}

TEST(RecordCodec, PeekRoutingReadsTopicPartitionAndKeyWithoutDecoding) {
  Record r = Sample();
  // The routing points into the bytes: they must outlive it.
  const std::string keyed = EncodeRecord(r);
  RecordRouting routing = PeekRouting(keyed);
  EXPECT_EQ(routing.topic, r.topic);
  EXPECT_EQ(routing.partition, r.partition);
  ASSERT_EQ(routing.key.has_value(), r.key.has_value());
  if (r.key) EXPECT_EQ(*routing.key, *r.key);
  r.key.reset();
  r.partition = -1;
  r.client_timestamp_ms.reset();
  const std::string unkeyed = EncodeRecord(r);
  routing = PeekRouting(unkeyed);
  EXPECT_EQ(routing.topic, r.topic);
  EXPECT_EQ(routing.partition, -1);
  EXPECT_FALSE(routing.key.has_value());
  EXPECT_EQ(PeekRouting("short").topic, "");
}

TEST(RecordCodec, Crc32cMatchesKnownVector) {
  // RFC 3720 test vector: 32 bytes of zeros.
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

}  // namespace
}  // namespace kspool::wal
