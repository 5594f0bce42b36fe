#include "wal/wal.h"

#include <gtest/gtest.h>

#include "rocksdb/db.h"
#include "tests/support/fault_fs.h"
#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/record.h"

namespace kspool::wal {
namespace {

class WalTest : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = env_;
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::shared_ptr<rocksdb::Env> env_;
};

TEST_F(WalTest, AppendScanSettleRoundTrip) {
  auto wal = OpenWal();
  auto r = wal->Append(MakeBatch("a", 3, "v"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->first_seq, 1u);
  EXPECT_EQ(r->receive_time_ms, clock_.NowMillis());
  std::vector<Entry> entries = ScanAll(wal.get());
  ASSERT_EQ(entries.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(entries[i].seq, 1u + i);
    EXPECT_TRUE(entries[i].status.ok());
    EXPECT_EQ(entries[i].record.topic, "a");
    EXPECT_EQ(entries[i].record.value, "v" + std::to_string(i));
    EXPECT_EQ(entries[i].record.receive_time_ms, clock_.NowMillis());
  }
  ASSERT_TRUE(wal->Settle(Delivered(entries)).ok());
  EXPECT_TRUE(ScanAll(wal.get()).empty());
  Stats s = wal->GetStats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.topics["a"].accepted.count, 3u);
  EXPECT_EQ(s.topics["a"].delivered.count, 3u);
  EXPECT_FALSE(s.oldest_seq.has_value());
}

TEST_F(WalTest, EmptyAppendIsInvalid) {
  auto wal = OpenWal();
  EXPECT_EQ(wal->Append(AppendBatch()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WalTest, ReopenRecoversUnsettledEntriesInOrder) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 5, "x")).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("b", 5, "y")).ok());
    std::vector<Entry> entries = ScanAll(wal.get());
    // Settle out of order: 2 and 7 only.
    ASSERT_TRUE(wal->Settle(Delivered({entries[1], entries[6]})).ok());
  }
  auto wal = OpenWal();
  std::vector<Entry> entries = ScanAll(wal.get());
  std::vector<uint64_t> seqs;
  for (const Entry& e : entries) seqs.push_back(e.seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 3, 4, 5, 6, 8, 9, 10}));
  Stats s = wal->GetStats();
  EXPECT_EQ(s.entries, 8u);
  EXPECT_EQ(s.topics["a"].pending().count, 4u);
  EXPECT_EQ(s.topics["b"].pending().count, 4u);
  EXPECT_EQ(s.oldest_seq, std::optional<uint64_t>(1));
}

TEST_F(WalTest, OutOfOrderSettlesAdvanceTheHeadOnceThePrefixIsDone) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("a", 6, "x")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_TRUE(wal->Settle(Delivered({e[3], e[4]})).ok());
  EXPECT_EQ(wal->GetStats().oldest_seq, std::optional<uint64_t>(1));
  ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[2]})).ok());
  EXPECT_EQ(wal->GetStats().oldest_seq, std::optional<uint64_t>(6));
  std::vector<Entry> rest = ScanAll(wal.get());
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].seq, 6u);
}

TEST_F(WalTest, SettledPrefixStaysDeadAcrossReopenBeforeItIsPhysicallyDeleted) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 10, "x")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[2]})).ok());
    // The persisted head moves with every settle.
    ASSERT_TRUE(wal->Settle(Delivered({e[3], e[4], e[5], e[6]})).ok());
  }
  auto wal = OpenWal();
  std::vector<Entry> rest = ScanAll(wal.get());
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[0].seq, 8u);
  EXPECT_EQ(wal->GetStats().oldest_seq, std::optional<uint64_t>(8));
  std::map<std::string, Counts> live;
  ASSERT_TRUE(wal->CountLive(&live).ok());
  EXPECT_EQ(live["a"].count, 3u);
  EXPECT_EQ(wal->GetStats().topics["a"].pending().count, 3u);
  clock_.Advance(2000);
  ASSERT_TRUE(wal->Settle(Delivered({rest[0]})).ok());
  EXPECT_EQ(ScanAll(wal.get()).size(), 2u);
}

// Reads ignore range tombstones only where that changes no answer (open_db.h): an older
// version trimmed dead letters with one, and those it trimmed stay gone.
TEST_F(WalTest, DeadLettersAnOlderVersionTrimmedWithARangeDeleteStayGone) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 6, "x")).ok());
    std::vector<Outcome> discards;
    for (const Entry& e : ScanAll(wal.get())) {
      discards.push_back(SettleDiscarded(e.seq, "a", e.size, "permanent_error", "refused",
                                         EncodeRecord(e.record)));
    }
    ASSERT_TRUE(wal->Settle(discards).ok());
    std::vector<DeadLetter> dead;
    ASSERT_TRUE(wal->ScanDeadLetters(0, 100, &dead).ok());
    ASSERT_EQ(dead.size(), 6u);
  }
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db, auto& cf) {
                std::vector<std::string> keys;
                std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, cf.at("dead")));
                for (it->SeekToFirst(); it->Valid(); it->Next())
                  keys.push_back(it->key().ToString());
                if (keys.size() != 6) return rocksdb::Status::Corruption("not 6 dead letters");
                rocksdb::Status s = db->DeleteRange({}, cf.at("dead"), keys[0], keys[2]);
                return s.ok() ? db->Flush({}, cf.at("dead")) : s;
              }).ok());
  auto wal = OpenWal();
  std::vector<DeadLetter> dead;
  ASSERT_TRUE(wal->ScanDeadLetters(0, 100, &dead).ok());
  EXPECT_EQ(dead.size(), 4u) << "dead letters under a range tombstone came back";
}

TEST_F(WalTest, SequenceNumbersContinueAfterFullDrainAndReopen) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 4, "x")).ok());
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
    EXPECT_EQ(wal->GetStats().entries, 0u);
  }
  auto wal = OpenWal();
  auto r = wal->Append(MakeBatch("a", 1, "y"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_seq, 5u);
}

TEST_F(WalTest, ReceiveTimeNeverGoesBackwardsWhenClockJumpsBack) {
  int64_t t0 = clock_.NowMillis();
  {
    auto wal = OpenWal();
    EXPECT_EQ(wal->Append(MakeBatch("a", 1, "x"))->receive_time_ms, t0);
    clock_.Set(t0 - 60'000);
    EXPECT_EQ(wal->Append(MakeBatch("a", 1, "x"))->receive_time_ms, t0);
    clock_.Set(t0 + 5);
    EXPECT_EQ(wal->Append(MakeBatch("a", 1, "x"))->receive_time_ms, t0 + 5);
  }
  clock_.Set(t0 - 3'600'000);  // and across a restart
  auto wal = OpenWal();
  EXPECT_EQ(wal->Append(MakeBatch("a", 1, "x"))->receive_time_ms, t0 + 5);
  int64_t prev = 0;
  for (const Entry& e : ScanAll(wal.get())) {
    EXPECT_GE(e.record.receive_time_ms, prev);
    prev = e.record.receive_time_ms;
  }
}

TEST_F(WalTest, ReceiveTimeBoundIsTheOldestLiveEntry) {
  auto wal = OpenWal();
  int64_t t0 = clock_.NowMillis();
  ASSERT_TRUE(wal->Append(MakeBatch("a", 2, "x")).ok());
  clock_.Advance(100);
  ASSERT_TRUE(wal->Append(MakeBatch("a", 2, "x")).ok());
  EXPECT_EQ(*wal->ReceiveTimeBound(0), t0);
  EXPECT_EQ(*wal->ReceiveTimeBound(3), t0 + 100);
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1]})).ok());
  EXPECT_EQ(*wal->ReceiveTimeBound(0), t0 + 100);
}

TEST_F(WalTest, EmptyBoundIsNowAndLaterEntriesComeAfterIt) {
  auto wal = OpenWal();
  int64_t now = clock_.NowMillis();
  // Commit point = bound - 1 = now, so nothing received later may carry `now`.
  EXPECT_EQ(*wal->ReceiveTimeBound(0), now + 1);
  auto r = wal->Append(MakeBatch("a", 1, "x"));
  EXPECT_GT(r->receive_time_ms, now);
}

TEST_F(WalTest, SavedCommitPointsSurviveReopenAndBoundFutureReceiveTimes) {
  int64_t now = clock_.NowMillis();
  {
    auto wal = OpenWal();
    // A topic gets points once the WAL tracks it: once appended to.
    ASSERT_TRUE(wal->Append(MakeBatch("a", 1, "x")).ok());
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
    CommitPoints p;
    p.global_ms = now + 50;
    p.topics_ms["a"] = now + 70;
    ASSERT_TRUE(wal->SaveCommitPoints(p).ok());
  }
  auto wal = OpenWal();
  CommitPoints p = wal->SavedCommitPoints();
  EXPECT_EQ(p.global_ms, now + 50);
  EXPECT_EQ(p.topics_ms["a"], now + 70);
  EXPECT_GT(wal->Append(MakeBatch("a", 1, "x"))->receive_time_ms, now + 70);
}

TEST_F(WalTest, LedgerHoldsAcrossReopen) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("a", 10, "x")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    e.resize(4);
    ASSERT_TRUE(wal->Settle(Delivered(e)).ok());
    std::vector<Outcome> discard = {SettleDiscarded(5, "a", ScanAll(wal.get())[0].size, "expired",
                                                    "too old", ScanAll(wal.get())[0].raw)};
    ASSERT_TRUE(wal->Settle(discard).ok());
  }
  auto wal = OpenWal();
  Stats s = wal->GetStats();
  const TopicStats& a = s.topics["a"];
  EXPECT_EQ(a.accepted.count, 10u);
  EXPECT_EQ(a.delivered.count, 4u);
  EXPECT_EQ(a.discarded.at("expired").count, 1u);
  EXPECT_EQ(a.pending().count, 5u);
  EXPECT_EQ(ScanAll(wal.get()).size(), 5u);
  EXPECT_EQ(s.entries, 5u);
}

TEST_F(WalTest, RefusesANewerFormatVersion) {
  { OpenWal(); }
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db, auto& cf) {
                return db->Put(rocksdb::WriteOptions(), cf.at("meta"), "format_version", "4");
              }).ok());
  Options o;
  o.dir = dir_.path();
  absl::Status s = Wal::Open(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("format version 4"), std::string::npos) << s;
}

TEST_F(WalTest, SecondOpenOfALiveWalIsUnavailable) {
  auto wal = OpenWal();
  Options o;
  o.dir = dir_.path();
  absl::Status s = Wal::Open(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("LOCK"), std::string::npos) << s;
}

}  // namespace
}  // namespace kspool::wal
