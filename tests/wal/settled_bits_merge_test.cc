// The settled_in/ bitmaps' merge operator: a settle writes only the bits it sets, and
// what readers see is still the whole bitmap (settled_bits_merge.h).
#include "wal/settled_bits_merge.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "rocksdb/db.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

SettledBits BitsOf(uint32_t count, std::initializer_list<uint32_t> set) {
  SettledBits b(count);
  for (uint32_t i : set) b.Set(i);
  return b;
}

// Merges `operands` onto `base` (nullptr: no stored bitmap) as RocksDB would on a read.
std::string MergeAsRead(const std::string* base, const std::vector<std::string>& operands) {
  std::vector<rocksdb::Slice> ops(operands.begin(), operands.end());
  rocksdb::Slice existing = base ? rocksdb::Slice(*base) : rocksdb::Slice();
  std::string out;
  rocksdb::Slice unused;
  rocksdb::MergeOperator::MergeOperationOutput o(out, unused);
  const rocksdb::Slice key("k");
  rocksdb::MergeOperator::MergeOperationInput in(key, base ? &existing : nullptr, ops, nullptr);
  EXPECT_TRUE(SettledBitsMerge()->FullMergeV2(in, &o));
  return out;
}

TEST(SettledBitsMerge, OperandsAreOredIntoTheStoredBitmap) {
  const std::string base = BitsOf(20, {0, 19}).stored();  // as an older build stored it
  const std::string merged = MergeAsRead(&base, {SettledBitsOperand(BitsOf(20, {3})),
                                                 SettledBitsOperand(BitsOf(20, {4, 5, 6, 7, 8}))});
  SettledBits got;
  ASSERT_TRUE(SettledBits::Parse(merged, 20, &got));
  EXPECT_EQ(merged, BitsOf(20, {0, 3, 4, 5, 6, 7, 8, 19}).stored());
  EXPECT_EQ(MergeAsRead(nullptr, {SettledBitsOperand(BitsOf(9, {8}))}), BitsOf(9, {8}).stored())
      << "no stored bitmap: the operands alone";
}

TEST(SettledBitsMerge, AnOperandOrBitmapOfAnotherCountSettlesNothing) {
  const std::string other_base = BitsOf(16, {1}).stored();
  EXPECT_EQ(MergeAsRead(&other_base, {SettledBitsOperand(BitsOf(20, {2}))}),
            BitsOf(20, {2}).stored());
  EXPECT_EQ(MergeAsRead(nullptr,
                        {SettledBitsOperand(BitsOf(7, {1})), SettledBitsOperand(BitsOf(20, {2}))}),
            BitsOf(20, {2}).stored())
      << "the newest operand names the record's count";
  EXPECT_EQ(MergeAsRead(nullptr, {"garbage", SettledBitsOperand(BitsOf(20, {2}))}),
            BitsOf(20, {2}).stored());
}

TEST(SettledBitsMerge, AnOperandCostsAtMostThreeBytesABitAndNeverMoreThanTheBitmap) {
  for (uint32_t count : {8u, 100u, 2000u, 65536u}) {
    for (uint32_t step : {1u, 7u, 64u, 1000u}) {
      SettledBits b(count);
      for (uint32_t i = step - 1; i < count; i += step) b.Set(i);
      const size_t size = SettledBitsOperand(b).size();
      EXPECT_LE(size, 1 + 3 + 3 * static_cast<size_t>(b.set())) << count << "/" << step;
      EXPECT_LE(size, 1 + 3 + b.stored().size()) << count << "/" << step;
      EXPECT_EQ(MergeAsRead(nullptr, {SettledBitsOperand(b)}), b.stored()) << count << "/" << step;
    }
  }
}

TEST(SettledBitsMerge, PartialMergeUnionsOperands) {
  const std::string a = SettledBitsOperand(BitsOf(30, {1, 2}));
  const std::string b = SettledBitsOperand(BitsOf(30, {29}));
  std::deque<rocksdb::Slice> ops = {a, b};
  std::string one;
  ASSERT_TRUE(SettledBitsMerge()->PartialMergeMulti("k", ops, &one, nullptr));
  EXPECT_EQ(MergeAsRead(nullptr, {one}), BitsOf(30, {1, 2, 29}).stored());
}

// Bytes RocksDB's own write-ahead logs in `dir` hold (no flush happens in these tests).
uint64_t RocksLogFileBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() == ".log") n += f.file_size();
  }
  return n;
}

// What settling 64 messages of a record one settle at a time writes: before, each settle
// rewrote the record's whole bitmap (count / 8 bytes), so a large record cost far more.
uint64_t BytesOf64SingleSettles(int record_messages) {
  kspool::testing::TempDir dir;
  ManualClock clock{1'000'000};
  Options o;
  o.dir = dir.path();
  o.clock = &clock;
  auto wal = Wal::Open(o);
  EXPECT_TRUE(wal.ok()) << wal.status();
  EXPECT_TRUE((*wal)->Append(MakeBatch("t", record_messages, "v")).ok());
  std::vector<Entry> e = ScanAll(wal->get());
  EXPECT_EQ(e.size(), static_cast<size_t>(record_messages));
  const uint64_t before = RocksLogFileBytes(dir.path());
  for (int i = 0; i < 64; ++i) {
    // Spread over the record, as one partition's messages of an unkeyed record are.
    const Entry& one = e[static_cast<size_t>(i) * (e.size() / 64)];
    EXPECT_TRUE((*wal)->Settle(Delivered({one})).ok());
  }
  const uint64_t written = RocksLogFileBytes(dir.path()) - before;
  std::vector<Entry> rest = ScanAll(wal->get());
  EXPECT_EQ(rest.size(), e.size() - 64) << "the bits read back as set";
  return written;
}

TEST(WalBitmapWrites, ASettleWritesOnlyTheBitsItSetsNotTheRecordsWholeBitmap) {
  const uint64_t small = BytesOf64SingleSettles(64 + 64);
  const uint64_t large = BytesOf64SingleSettles(64 * 32);  // a 256-byte bitmap
  RecordProperty("small_record_bytes", std::to_string(small));
  RecordProperty("large_record_bytes", std::to_string(large));
  // Rewriting the bitmap would add 64 x 240 bytes; an operand grows by a byte or two.
  EXPECT_LT(large, small + 64 * 16) << "small record " << small << " B, large " << large << " B";
}

}  // namespace
}  // namespace kspool::wal
