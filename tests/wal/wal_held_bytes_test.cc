// What a part-settled batch record keeps on disk is charged to its topic: a record's
// settled messages stay stored until its last one settles (FORMAT.md, "Settling part of
// a record"), so admission counts them (TopicStats::held), or one stuck message per
// record lets the log grow far past --wal-max-bytes and --topic-max-bytes.
#include <gtest/gtest.h>

#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/keys.h"

namespace kspool::wal {
namespace {

class WalHeldBytes : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal(uint64_t max_bytes, uint64_t max_topic_bytes) {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.max_bytes = max_bytes;
    o.max_topic_bytes = max_topic_bytes;
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(wal).value();
  }
  // Settles every entry of each record but its last (as one stuck partition would).
  static std::vector<Outcome> AllButLastOfEach(const std::vector<Entry>& e, size_t per_record) {
    std::vector<Entry> settle;
    for (size_t i = 0; i < e.size(); ++i) {
      if (i % per_record != per_record - 1) settle.push_back(e[i]);
    }
    return Delivered(settle);
  }
  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000};
};

TEST_F(WalHeldBytes, SettledMessagesOfAPartSettledRecordStillCountAgainstTheTopicBound) {
  const uint64_t record = MakeBatch("stuck", 10, "value-").bytes();
  auto wal = OpenWal(0, 3 * record);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(wal->Append(MakeBatch("stuck", 10, "value-")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 30u);
  ASSERT_TRUE(wal->Settle(AllButLastOfEach(e, 10)).ok());
  Stats st = wal->GetStats();
  EXPECT_EQ(st.topics["stuck"].pending().count, 3u);
  EXPECT_EQ(st.topics["stuck"].held.count, 27u);
  EXPECT_EQ(st.topics["stuck"].stored().bytes, 3 * record);
  EXPECT_EQ(st.held_bytes, st.topics["stuck"].held.bytes);
  absl::StatusOr<AppendResult> full = wal->Append(MakeBatch("stuck", 1, "value-"));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted)
      << "the three records are still on disk whole";
  EXPECT_TRUE(wal->Append(MakeBatch("other", 10, "value-")).ok()) << "other topics go on";
  ExpectLedgerHolds(wal.get(), "part-settled");
}

TEST_F(WalHeldBytes, HeldBytesLeaveWithTheRecordsLastMessageAndSurviveAReopen) {
  const uint64_t record = MakeBatch("t", 10, "value-").bytes();
  {
    auto wal = OpenWal(2 * record, 0);
    ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "value-")).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "value-")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    ASSERT_TRUE(wal->Settle(AllButLastOfEach(e, 10)).ok());
    EXPECT_EQ(wal->Append(MakeBatch("u", 1, "v")).status().code(),
              absl::StatusCode::kResourceExhausted)
        << "the WAL's capacity counts the held bytes too";
  }
  auto wal = OpenWal(2 * record, 0);
  Stats st = wal->GetStats();
  EXPECT_EQ(st.topics["t"].held.count, 18u) << "persisted with the settles";
  std::vector<Entry> rest = ScanAll(wal.get());
  ASSERT_EQ(rest.size(), 2u);
  ASSERT_TRUE(wal->Settle(Delivered({rest[0]})).ok());
  st = wal->GetStats();
  EXPECT_EQ(st.topics["t"].held.count, 9u) << "the first record is gone, and its held bytes";
  EXPECT_EQ(st.topics["t"].stored().bytes, record);
  ASSERT_TRUE(wal->Settle(Delivered({rest[1]})).ok());
  st = wal->GetStats();
  EXPECT_EQ(st.topics["t"].held.count, 0u);
  EXPECT_EQ(st.topics["t"].held.bytes, 0u);
  EXPECT_EQ(st.held_bytes, 0u);
  EXPECT_TRUE(wal->Append(MakeBatch("u", 10, "value-")).ok());
}

// A settle applied again (after a failed sync whose batch RocksDB kept, or a restart)
// changes nothing: the held bytes are not counted twice.
TEST_F(WalHeldBytes, ASettleAppliedTwiceHoldsItsBytesOnce) {
  auto wal = OpenWal(0, 0);
  ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "value-")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  const std::vector<Outcome> some = Delivered({e[0], e[1], e[2]});
  ASSERT_TRUE(wal->Settle(some).ok());
  const Counts held = wal->GetStats().topics["t"].held;
  EXPECT_EQ(held.count, 3u);
  ASSERT_TRUE(wal->Settle(some).ok());
  EXPECT_EQ(wal->GetStats().topics["t"].held.count, 3u);
  EXPECT_EQ(wal->GetStats().topics["t"].held.bytes, held.bytes);
}

// A bitmap that settles nothing (another length than its record's count) must not outlive
// its record when one settle then settles every message of it: before, the shortcut for
// that case deleted the record without looking, and the bitmap stayed an orphan.
TEST_F(WalHeldBytes, ARecordSettledWholeTakesAnyBitmapWithIt) {
  {
    auto wal = OpenWal(0, 0);
    ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "value-")).ok());
  }
  std::string log_key = keys::Seq(10);
  for (int i = 3; i >= 0; --i) log_key.push_back(static_cast<char>(10u >> (8 * i)));
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [&](rocksdb::DB* db,
                                                           kspool::testing::RawHandles& cf) {
                return db->Put({}, cf.at("meta"), keys::SettledIn(log_key), "bad-length");
              }).ok());
  auto wal = OpenWal(0, 0);
  absl::StatusOr<BitmapCheck> before = wal->CheckBitmaps();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->bad_length.size(), 1u);
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 10u) << "a bitmap of another length settles nothing";
  ASSERT_TRUE(wal->Settle(Delivered(e)).ok());
  absl::StatusOr<BitmapCheck> after = wal->CheckBitmaps();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->bitmaps, 0u) << "the bitmap outlived its record";
  EXPECT_EQ(wal->GetStats().topics["t"].held.count, 0u);
}

}  // namespace
}  // namespace kspool::wal
