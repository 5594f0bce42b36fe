// The dead letters' own limits: beyond their bytes or age, the oldest are removed, each
// counted under `dead_dropped` per topic and limit, and the ledger still holds.
#include <gtest/gtest.h>

#include "rocksdb/db.h"
#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {


class WalDeadLetterLimits : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.max_dead_letter_bytes = max_bytes_;
    o.max_dead_letter_age_ms = max_age_ms_;
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(wal).value();
  }
  // Appends n messages to `topic` and discards them all; returns their sequence numbers.
  std::vector<uint64_t> AppendAndDiscard(Wal* wal, const std::string& topic, int n) {
    EXPECT_TRUE(wal->Append(MakeBatch(topic, n, "value-")).ok());
    std::vector<Entry> e = ScanAll(wal);
    std::vector<Outcome> discards;
    std::vector<uint64_t> seqs;
    for (const Entry& x : e) {
      if (x.record.topic != topic) continue;
      discards.push_back(SettleDiscarded(x.seq, topic, x.size, "expired", "too old",
                                         EncodeRecord(x.record), x.record.receive_time_ms));
      seqs.push_back(x.seq);
    }
    EXPECT_TRUE(wal->Settle(discards).ok());
    return seqs;
  }
  std::vector<uint64_t> DeadSeqs(Wal* wal) {
    std::vector<DeadLetter> dead;
    EXPECT_TRUE(wal->ScanDeadLetters(0, 1000, &dead).ok());
    std::vector<uint64_t> seqs;
    for (const DeadLetter& d : dead) seqs.push_back(d.seq);
    return seqs;
  }
  static void ExpectLedger(Wal* wal, const std::string& topic) {
    std::map<std::string, Counts> live;
    ASSERT_TRUE(wal->CountLive(&live).ok());
    TopicStats t = wal->GetStats().topics[topic];
    uint64_t discarded = 0;
    for (const auto& [reason, c] : t.discarded) discarded += c.count;
    EXPECT_EQ(t.accepted.count, t.delivered.count + discarded + live[topic].count);
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000'000};
  uint64_t max_bytes_ = 0;
  int64_t max_age_ms_ = 0;
};

TEST_F(WalDeadLetterLimits, BeyondTheByteLimitTheOldestAreRemovedAndCounted) {
  auto wal = OpenWal();
  std::vector<uint64_t> a = AppendAndDiscard(wal.get(), "a", 10);
  std::vector<uint64_t> b = AppendAndDiscard(wal.get(), "b", 10);
  const Counts all = wal->GetStats().dead_letters;
  ASSERT_EQ(all.count, 20u);
  wal.reset();
  max_bytes_ = all.bytes / 2;  // room for about the newer half
  wal = OpenWal();

  absl::StatusOr<DeadLetterTrim> trim = wal->TrimDeadLetters();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->by_size.count, 10u);
  EXPECT_EQ(trim->by_age.count, 0u);
  EXPECT_EQ(DeadSeqs(wal.get()), b) << "the oldest went first";
  Stats st = wal->GetStats();
  EXPECT_LE(st.dead_letters.bytes, max_bytes_);
  EXPECT_EQ(st.dead_letters.count, 10u);
  EXPECT_EQ(st.topics["a"].dead_dropped["size"].count, 10u);
  EXPECT_EQ(st.topics["a"].discarded["expired"].count, 10u) << "still counted as discarded";
  ExpectLedger(wal.get(), "a");
  ExpectLedger(wal.get(), "b");

  ASSERT_TRUE(wal->TrimDeadLetters().ok());
  EXPECT_EQ(DeadSeqs(wal.get()), b) << "within the limit, nothing more goes";

  // The totals and the per-topic count are persisted.
  wal.reset();
  wal = OpenWal();
  st = wal->GetStats();
  EXPECT_EQ(st.dead_letters.count, 10u);
  EXPECT_EQ(st.topics["a"].dead_dropped["size"].count, 10u);
  EXPECT_EQ(st.topics["a"].dead_dropped["size"].bytes, all.bytes - st.dead_letters.bytes);
}

TEST_F(WalDeadLetterLimits, DeadLettersOlderThanTheAgeLimitAreRemoved) {
  max_age_ms_ = 2 * kHour;
  auto wal = OpenWal();
  AppendAndDiscard(wal.get(), "a", 3);
  clock_.Advance(kHour);
  std::vector<uint64_t> newer = AppendAndDiscard(wal.get(), "a", 2);

  clock_.Advance(kHour - 1);
  absl::StatusOr<DeadLetterTrim> trim = wal->TrimDeadLetters();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->by_age.count, 0u) << "not yet two hours old";

  clock_.Advance(1);
  trim = wal->TrimDeadLetters();
  ASSERT_TRUE(trim.ok()) << trim.status();
  EXPECT_EQ(trim->by_age.count, 3u);
  EXPECT_EQ(DeadSeqs(wal.get()), newer);
  clock_.Advance(kHour);
  ASSERT_TRUE(wal->TrimDeadLetters().ok());
  EXPECT_TRUE(DeadSeqs(wal.get()).empty());
  Stats st = wal->GetStats();
  EXPECT_EQ(st.topics["a"].dead_dropped["age"].count, 5u);
  EXPECT_EQ(st.dead_letters.count, 0u);
  EXPECT_EQ(st.dead_letters.bytes, 0u);
  ExpectLedger(wal.get(), "a");
}

TEST_F(WalDeadLetterLimits, WithoutLimitsNothingIsRemoved) {
  auto wal = OpenWal();
  std::vector<uint64_t> seqs = AppendAndDiscard(wal.get(), "a", 5);
  clock_.Advance(1000 * kHour);
  absl::StatusOr<DeadLetterTrim> trim = wal->TrimDeadLetters();
  ASSERT_TRUE(trim.ok());
  EXPECT_EQ(trim->by_age.count + trim->by_size.count, 0u);
  EXPECT_EQ(DeadSeqs(wal.get()), seqs);
}

TEST_F(WalDeadLetterLimits, AWalWithoutDeadLetterTotalsCountsThemOnceAtOpen) {
  {
    auto wal = OpenWal();
    AppendAndDiscard(wal.get(), "a", 4);
  }
  const Counts before = OpenWal()->GetStats().dead_letters;
  ASSERT_EQ(before.count, 4u);
  // As a WAL written before the totals were kept in meta.
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db, auto& cf) {
                return db->Delete(rocksdb::WriteOptions(), cf.at("meta"), "dead_letters");
              }).ok());
  auto wal = OpenWal();
  EXPECT_EQ(wal->GetStats().dead_letters.count, before.count);
  EXPECT_EQ(wal->GetStats().dead_letters.bytes, before.bytes);
}

}  // namespace
}  // namespace kspool::wal
