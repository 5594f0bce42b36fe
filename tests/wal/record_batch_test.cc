// The batch record codec (format version 2, record.h): keys that name their sequence
// numbers and sort with version-1 keys, a round trip of every field, the accounted size
// equal to the version-1 record's, and every damaged record refused with a clear code.
#include <gtest/gtest.h>

#include "wal/record.h"

namespace kspool::wal {
namespace {

std::vector<Record> Messages() {
  std::vector<Record> m(4);
  for (size_t i = 0; i < m.size(); ++i) {
    m[i].topic = "orders";
    m[i].value = std::string(10 * i, 'v') + std::to_string(i);
  }
  m[0].key = std::string("k\0ey", 4);
  m[0].headers = {{"h", "1"}, {"h", "2"}, {"empty", ""}};
  m[1].partition = 7;
  m[1].client_timestamp_ms = 1'700'000'000'123;
  m[2].key = "";  // an empty key, not no key
  m[3].value = std::string("\0\xff", 2);
  return m;
}

std::string Sealed(const std::vector<Record>& messages, int64_t receive_ms) {
  BatchRecordBuilder b("orders");
  for (const Record& r : messages) b.Add(ViewOf(r));
  std::string bytes = b.Finish();
  SealRecord(receive_ms, &bytes);
  return bytes;
}

TEST(BatchRecord, RoundTripKeepsEveryFieldOfEveryMessage) {
  const std::vector<Record> in = Messages();
  // The view points into the stored bytes: they outlive it.
  const std::string bytes = Sealed(in, 1'700'000'000'456);
  absl::StatusOr<BatchView> v = ParseBatch(bytes, 4);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->bodies.size(), 4u);
  EXPECT_EQ(v->topic, "orders");
  EXPECT_EQ(v->receive_time_ms, 1'700'000'000'456);
  for (size_t i = 0; i < in.size(); ++i) {
    absl::StatusOr<Record> r = v->Decode(i);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    EXPECT_EQ(r->topic, "orders");
    EXPECT_EQ(r->partition, in[i].partition) << i;
    EXPECT_EQ(r->key, in[i].key) << i;
    EXPECT_EQ(r->value, in[i].value) << i;
    EXPECT_EQ(r->headers, in[i].headers) << i;
    EXPECT_EQ(r->client_timestamp_ms, in[i].client_timestamp_ms) << i;
    EXPECT_EQ(r->receive_time_ms, 1'700'000'000'456) << i;
    RecordRouting routing = v->Routing(i);
    EXPECT_EQ(routing.topic, "orders");
    EXPECT_EQ(routing.partition, in[i].partition);
    EXPECT_EQ(routing.key.has_value(), in[i].key.has_value());
    if (in[i].key) {
      EXPECT_EQ(*routing.key, *in[i].key);
    }
  }
}

TEST(BatchRecord, AMessageCountsTheBytesOfItsVersionOneRecord) {
  BatchRecordBuilder b("orders");
  const std::vector<Record> in = Messages();
  for (const Record& r : in) b.Add(ViewOf(r));
  std::string bytes = b.Finish();
  SealRecord(1, &bytes);
  absl::StatusOr<BatchView> v = ParseBatch(bytes, 4);
  ASSERT_TRUE(v.ok()) << v.status();
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(b.MessageSize(i), EncodeRecord(in[i]).size()) << i;
    EXPECT_EQ(v->MessageSize(i), b.MessageSize(i)) << i;
  }
}

std::string V1Key(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(seq >> (8 * (7 - i)));
  return k;
}

TEST(BatchRecord, KeysNameTheirSequenceNumbersAndSortWithVersionOneKeys) {
  std::optional<LogKey> k = ParseLogKey(BatchKey(1'000'000'007, 100));
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->first_seq, 1'000'000'007u);
  EXPECT_EQ(k->count, 100u);
  EXPECT_TRUE(k->batch);
  k = ParseLogKey(V1Key(5));
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->first_seq, 5u);
  EXPECT_EQ(k->count, 1u);
  EXPECT_FALSE(k->batch);
  // RocksDB's bytewise order is sequence order across both versions: records hold
  // disjoint ranges, [4], [5, 9], [10], [11, 12].
  EXPECT_LT(V1Key(4), BatchKey(5, 5));
  EXPECT_LT(BatchKey(5, 5), V1Key(10));
  EXPECT_LT(V1Key(10), BatchKey(11, 2));
  EXPECT_LT(BatchKey(255, 1), BatchKey(256, 1));
  // A forward seek to any number it holds lands on the record: its key is at or above
  // the 8-byte key of each of its numbers, and below the next record's.
  for (uint64_t seq = 5; seq <= 9; ++seq) {
    EXPECT_GE(BatchKey(5, 5), V1Key(seq)) << seq;
  }
  EXPECT_LT(BatchKey(5, 5), V1Key(10));
  EXPECT_FALSE(ParseLogKey(BatchKey(5, 0)).has_value());
  EXPECT_FALSE(ParseLogKey(std::string(9, '\0')).has_value());
  EXPECT_FALSE(ParseLogKey(V1Key(3) + std::string("\0\0\0\5", 4)).has_value())
      << "5 numbers cannot end at 3";
}

TEST(BatchRecord, EveryFlippedBitIsACorruptRecord) {
  const std::string good = Sealed(Messages(), 42);
  for (size_t byte = 1; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[byte] ^= static_cast<char>(1 << bit);
      EXPECT_EQ(ParseBatch(bad, 4).status().code(), absl::StatusCode::kDataLoss)
          << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(BatchRecord, TruncatedOrMiscountedRecordsAreDataLoss) {
  const std::string good = Sealed(Messages(), 42);
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(ParseBatch(good.substr(0, n), 4).status().code(), absl::StatusCode::kDataLoss) << n;
  }
  absl::Status miscounted = ParseBatch(good, 5).status();
  EXPECT_EQ(miscounted.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(miscounted.message().find("key says 5"), std::string_view::npos) << miscounted;
}

TEST(BatchRecord, EachVersionRefusesTheOtherClearly) {
  // A build that knows only version 1 meets a batch record: FAILED_PRECONDITION naming the
  // version, never a misread (and the reverse).
  absl::Status old_reader = DecodeRecord(Sealed(Messages(), 42)).status();
  EXPECT_EQ(old_reader.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(old_reader.message().find("version 2"), std::string_view::npos) << old_reader;
  absl::Status batch_reader = ParseBatch(EncodeRecord(Messages()[0]), 1).status();
  EXPECT_EQ(batch_reader.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(batch_reader.message().find("version 1"), std::string_view::npos) << batch_reader;
}

}  // namespace
}  // namespace kspool::wal
