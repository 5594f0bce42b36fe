// Delivery tallies (tally_store.h; FORMAT.md, "Delivery tallies"): per Kafka partition,
// the distinct sequence numbers settled as delivered there, counted and sketched in the
// settle's own batch: each delivery once (also a settle applied twice), discards never,
// across reopens and a forgotten topic's return, never from 0 again.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/raw_wal.h"
#include "tests/wal/delivery_test_util.h"
#include "wal/keys.h"

namespace kspool::wal {
namespace {

constexpr int64_t kHour = 3'600'000;

class WalTally : public DeliveryTest {
 protected:
  static DeliveryTally Of(Wal* wal, const std::string& topic, int32_t partition) {
    absl::StatusOr<DeliveryTally> t = wal->DeliveryTallyOf(topic, partition);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : DeliveryTally{};
  }
  // What the delivery index says was delivered to (topic, partition), as a tally.
  static DeliveryTally Indexed(Wal* wal, const std::string& topic, int32_t partition) {
    DeliveryTally t;
    std::vector<uint64_t> seqs;
    for (uint64_t s = 1; s < wal->GetStats().next_seq; ++s) seqs.push_back(s);
    for (const Outcome& o : Lookup(wal, seqs)) {
      if (!o.delivered() || o.topic != topic || o.partition != partition) continue;
      t.count += 1;
      t.sketch.Add(o.seq);
    }
    return t;
  }
  static SeqSketch SketchOf(const std::vector<Entry>& entries) {
    SeqSketch s;
    for (const Entry& e : entries) s.Add(e.seq);
    return s;
  }
};

TEST_F(WalTally, EachPartitionCountsAndSketchesWhatWasDeliveredThereAndNotTheDiscards) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 6, "t");
  std::vector<Outcome> batch = Deliver({e[0], e[1], e[2]}, 0, 10);
  for (const Outcome& o : Deliver({e[3]}, 1, 4)) batch.push_back(o);
  batch.push_back(Discard(e[4], "expired", "too old"));
  ASSERT_TRUE(wal->Settle(batch).ok());
  DeliveryTally p0 = Of(wal.get(), "t", 0);
  EXPECT_EQ(p0.count, 3u);
  EXPECT_EQ(p0.sketch, SketchOf({e[0], e[1], e[2]}));
  EXPECT_EQ(Of(wal.get(), "t", 1).count, 1u);
  EXPECT_EQ(Of(wal.get(), "t", 2).count, 0u) << "nothing was delivered there";
  EXPECT_TRUE(Of(wal.get(), "t", 2).sketch.empty());

  // The next settle adds to it: running totals, which a heartbeat carries.
  ASSERT_TRUE(wal->Settle(Deliver({e[5]}, 0, 13)).ok());
  p0 = Of(wal.get(), "t", 0);
  EXPECT_EQ(p0.count, 4u);
  SeqSketch diff = p0.sketch;
  diff.Subtract(SketchOf({e[0], e[1], e[2]}));
  SeqSketch::Decoded d = diff.Decode();
  ASSERT_TRUE(d.complete);
  EXPECT_EQ(d.positive, std::vector<uint64_t>{e[5].seq});
}

TEST_F(WalTally, ASettleAppliedTwiceCountsEachDeliveryOnce) {
  auto wal = OpenWal();
  std::vector<Entry> e = Append(wal.get(), 3, "t");
  const std::vector<Outcome> batch = Deliver(e, 2, 0);
  ASSERT_TRUE(wal->Settle(batch).ok());
  ASSERT_TRUE(wal->Settle(batch).ok());  // the drain's retry after a failed sync
  EXPECT_EQ(Of(wal.get(), "t", 2).count, 3u);
  EXPECT_EQ(Of(wal.get(), "t", 2).sketch, SketchOf(e));
}

// The sync of a settle fails; RocksDB may have kept its batch or not. Either way the
// tally is what the delivery index holds as delivered there, and the drain's retry
// brings it to every delivery once.
TEST_F(WalTally, AfterAFailedSettleSyncItEqualsWhatWasDurablySettled) {
  auto wal = OpenWal();
  for (const bool power_cut : {true, false}) {
    const std::string t = power_cut ? "dropped" : "kept";  // a topic per case
    SCOPED_TRACE(power_cut ? "the failed batch is dropped" : "RocksDB kept the failed batch");
    std::vector<Entry> e;
    const std::vector<Outcome> rest = SettleHalfThenFailTheSync(wal.get(), t, power_cut, &e);
    ASSERT_FALSE(HasFailure());
    DeliveryTally now = Of(wal.get(), t, 0);
    DeliveryTally want = Indexed(wal.get(), t, 0);
    EXPECT_EQ(now.count, want.count);
    EXPECT_EQ(now.sketch, want.sketch);
    ASSERT_TRUE(wal->Settle(rest).ok());  // the retry
    now = Of(wal.get(), t, 0);
    EXPECT_EQ(now.count, 10u);
    EXPECT_EQ(now.sketch, SketchOf(e));
  }
}

TEST_F(WalTally, TalliesSurviveAReopenAndGoOnFromWhereTheyWere) {
  std::vector<Entry> first;
  {
    auto wal = OpenWal();
    first = Append(wal.get(), 4, "t");
    ASSERT_TRUE(wal->Settle(Deliver(first, 0, 0)).ok());
  }
  auto wal = OpenWal();
  std::vector<Entry> more = Append(wal.get(), 2, "t");
  ASSERT_TRUE(wal->Settle(Deliver(more, 0, 4)).ok());
  DeliveryTally t = Of(wal.get(), "t", 0);
  EXPECT_EQ(t.count, 6u);
  first.insert(first.end(), more.begin(), more.end());
  EXPECT_EQ(t.sketch, SketchOf(first));
}

// A forgotten topic's tallies (2.3 KB per partition) leave the disk with it, so they do
// not grow with every topic name ever sent; if it returns, they start from 0.
TEST_F(WalTally, AForgottenTopicsTalliesLeaveTheDiskAndStartFromZeroIfItReturns) {
  auto open = [&] { return OpenWal([](Options* o) { o->topic_idle_forget_ms = kHour; }); };
  auto wal = open();
  ASSERT_TRUE(wal->Settle(Deliver(Append(wal.get(), 2, "idle"), 0, 0)).ok());
  ASSERT_TRUE(wal->Settle(Deliver(Append(wal.get(), 1, "idle"), 1, 0)).ok());
  clock_.Advance(kHour + 1);
  ASSERT_TRUE(wal->Settle(Deliver(Append(wal.get(), 1, "busy"), 3, 9)).ok());
  absl::StatusOr<std::vector<std::string>> gone = wal->ForgetIdleTopics();
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(*gone, std::vector<std::string>{"idle"});
  EXPECT_EQ(Of(wal.get(), "idle", 0).count, 0u);
  EXPECT_EQ(Of(wal.get(), "idle", 1).count, 0u);
  EXPECT_EQ(Of(wal.get(), "busy", 3).count, 1u) << "only the forgotten topic's leave";
  wal.reset();
  size_t stored = 0;
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [&](rocksdb::DB* db,
                                                           kspool::testing::RawHandles& cf) {
                std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, cf.at("meta")));
                for (it->Seek(std::string(keys::kTallyPrefix));
                     it->Valid() && it->key().starts_with(std::string(keys::kTallyPrefix));
                     it->Next()) {
                  ++stored;
                }
                return it->status();
              }).ok());
  EXPECT_EQ(stored, 1u) << "busy/3 only";
  wal = open();
  std::vector<Entry> back = Append(wal.get(), 1, "idle");
  ASSERT_TRUE(wal->Settle(Deliver(back, 0, 2)).ok());
  EXPECT_EQ(Of(wal.get(), "idle", 0).count, 1u);
  EXPECT_EQ(Of(wal.get(), "idle", 0).sketch, SketchOf(back));
}

// A tally whose stored bytes do not parse (a damaged key) starts again from 0 and is
// counted: refusing it would stop every settle, every topic's, for one key.
TEST_F(WalTally, ADamagedTallyStartsAgainFromZeroAndIsCountedInsteadOfStoppingSettles) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Settle(Deliver(Append(wal.get(), 3, "t"), 0, 0)).ok());
  }
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db,
                                                          kspool::testing::RawHandles& cf) {
                rocksdb::WriteOptions wo;
                wo.sync = true;
                return db->Put(wo, cf.at("meta"), keys::Tally("t", 0), "damaged");
              }).ok());
  auto wal = OpenWal();
  EXPECT_EQ(wal->DeliveryTallyOf("t", 0).status().code(), absl::StatusCode::kDataLoss)
      << "a reader is told, not given a made-up tally";
  std::vector<Entry> e = Append(wal.get(), 2, "t");
  std::vector<Entry> other = Append(wal.get(), 1, "u");
  std::vector<Outcome> batch = Deliver(e, 0, 3);
  for (const Outcome& o : Deliver(other, 0, 0)) batch.push_back(o);
  ASSERT_TRUE(wal->Settle(batch).ok()) << "one damaged key stopped the settle";
  EXPECT_EQ(Of(wal.get(), "t", 0).count, 2u);
  EXPECT_EQ(Of(wal.get(), "t", 0).sketch, SketchOf(e));
  EXPECT_EQ(Of(wal.get(), "u", 0).count, 1u);
  EXPECT_EQ(wal->GetStats().tallies_restarted, 1u);
  ASSERT_TRUE(wal->Settle(Deliver(Append(wal.get(), 1, "t"), 0, 5)).ok());
  EXPECT_EQ(Of(wal.get(), "t", 0).count, 3u);
  EXPECT_EQ(wal->GetStats().tallies_restarted, 1u) << "restarted once, then kept";
}

}  // namespace
}  // namespace kspool::wal
