// Exact accounting (ARCHITECTURE.md invariant 9): Settle() and SaveCommitPoints() applied
// again — after a failed sync whose batch RocksDB kept or dropped, a Reopen(), a
// restart, or simply twice — change nothing; the ledger accepted = delivered +
// discarded + live (live found by scanning) holds at every step.
#include <gtest/gtest.h>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

class WalIdempotent : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Wal> OpenWal(uint64_t max_bytes = 0) {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    o.max_bytes = max_bytes;
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  static Outcome Discard(const Entry& e) {
    return SettleDiscarded(e.seq, e.record.topic, e.size, "expired", "too old",
                           EncodeRecord(e.record), e.record.receive_time_ms);
  }
  static size_t DeadLetters(Wal* wal) {
    std::vector<DeadLetter> dead;
    EXPECT_TRUE(wal->ScanDeadLetters(0, 1000, &dead).ok());
    return dead.size();
  }
  // After a failed sync: GetParam() true leaves the batch where RocksDB wrote it (a
  // Reopen() replays it: kept); false cuts the power first, dropping it.
  void RecoverFromFailedSync(Wal* wal) {
    if (!GetParam()) {
      fs_->CutPowerWhile([&] { EXPECT_FALSE(wal->Reopen().ok()); });
    }
    ASSERT_TRUE(wal->Reopen().ok());
  }
  // How many outcomes of a batch a recovery kept: all or none.
  uint64_t Kept(uint64_t n) const { return GetParam() ? n : 0; }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'000'000};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

INSTANTIATE_TEST_SUITE_P(BatchOfTheFailedSync, WalIdempotent, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Kept" : "Dropped"; });

TEST_P(WalIdempotent, SettleRetriedAfterAFailedSyncReopenAndRestartCountsOnce) {
  const uint64_t one = MakeBatch("t", 1, "v0").bytes();
  auto wal = OpenWal(12 * one);  // a counter counted twice would wrap and fill it
  ASSERT_TRUE(wal->Append(MakeBatch("t", 12, "v")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 12u);
  ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[2]})).ok());
  // The head run, one out of order above a gap, and a discard.
  std::vector<Outcome> batch = Delivered({e[3], e[4], e[5], e[6], e[8]});
  batch.push_back(Discard(e[9]));

  fs_->FailNextSyncs(1);
  EXPECT_EQ(wal->Settle(batch).code(), absl::StatusCode::kUnavailable);
  ExpectLedgerHolds(wal.get(), "after the failed sync");
  EXPECT_EQ(wal->Settle(batch).code(), absl::StatusCode::kUnavailable)
      << "nothing is settled while the state is unknown";
  RecoverFromFailedSync(wal.get());
  TopicStats t = wal->GetStats().topics["t"];
  ASSERT_EQ(t.delivered.count, 3 + Kept(5)) << "the scenario: RocksDB kept the batch or not";
  ExpectLedgerHolds(wal.get(), "after the reopen");

  ASSERT_TRUE(wal->Settle(batch).ok());  // the drain's retry
  ExpectLedgerHolds(wal.get(), "after the retry");
  t = wal->GetStats().topics["t"];
  EXPECT_EQ(t.delivered.count, 8u);
  EXPECT_EQ(t.discarded["expired"].count, 1u);
  EXPECT_EQ(t.pending().count, 3u);
  EXPECT_EQ(DeadLetters(wal.get()), 1u);
  const Counts dead = wal->GetStats().dead_letters;
  EXPECT_EQ(dead.count, 1u) << "the dead letters' totals are counted once too";

  wal.reset();  // restart; the dead letter takes its share of the capacity
  wal = OpenWal(12 * one + dead.bytes);
  ExpectLedgerHolds(wal.get(), "after the restart");
  ASSERT_TRUE(wal->Settle(batch).ok());
  ExpectLedgerHolds(wal.get(), "after a retry following the restart");
  t = wal->GetStats().topics["t"];
  EXPECT_EQ(t.delivered.count, 8u);
  EXPECT_EQ(t.discarded["expired"].count, 1u);
  EXPECT_EQ(wal->GetStats().dead_letters.count, 1u);
  EXPECT_EQ(wal->GetStats().dead_letters.bytes, dead.bytes);
  // The 9 settled messages are held in their record with the 3 live ones, once.
  t = wal->GetStats().topics["t"];
  EXPECT_EQ(t.held.count, 9u);
  EXPECT_EQ(t.stored().count, 12u);
  EXPECT_EQ(wal->Append(MakeBatch("t", 1, "w")).status().code(),
            absl::StatusCode::kResourceExhausted)
      << "the record still takes its 12 on disk";
  ASSERT_TRUE(wal->Settle(Delivered({e[7], e[10], e[11]})).ok());  // the record goes
  EXPECT_EQ(wal->GetStats().topics["t"].held.count, 0u);
  auto r = wal->Append(MakeBatch("t", 12, "w"));
  EXPECT_TRUE(r.ok()) << r.status() << ": 12 fit in 12 (and the dead letter)";
  ExpectLedgerHolds(wal.get(), "after appending again");
}

TEST_P(WalIdempotent, SaveCommitPointsRetriedAfterAFailedSyncFoldsTheReportOnce) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal->Append(MakeBatch("t", 3, "a")).ok());  // received at 1'000'000
  clock_.Set(1'000'100);
  ASSERT_TRUE(wal->Append(MakeBatch("u", 2, "b")).ok());  // received at 1'000'100
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[3]})).ok());
  ASSERT_TRUE(wal->Settle({Discard(e[2])}).ok());
  auto expect_report_matches = [&](const std::string& step) {
    Report r = wal->GetReport();
    for (const auto& [topic, ledger] : r.ledger) {
      std::map<std::string, uint64_t> settled = {{kOutcomeDelivered, ledger.delivered.count}};
      for (const auto& [reason, c] : ledger.discarded) settled[reason] = c.count;
      for (const auto& [outcome, n] : settled) {
        const OutcomeCounts& b = r.at_or_before[topic][outcome];
        const OutcomeCounts& a = r.after[topic][outcome];
        EXPECT_EQ(b.count + a.count, n) << step << ": " << topic << "/" << outcome;
        if (b.count) {
          EXPECT_LE(b.max_receive_ms, r.commit_point_ms) << step << ": " << topic;
        }
        if (a.count) {
          EXPECT_GT(a.min_receive_ms, r.commit_point_ms) << step << ": " << topic;
        }
      }
    }
  };
  expect_report_matches("before");

  fs_->FailNextSyncs(1);
  EXPECT_EQ(wal->SaveCommitPoints({1'000'050, {}}).code(), absl::StatusCode::kUnavailable);
  expect_report_matches("after the failed sync");
  RecoverFromFailedSync(wal.get());
  ASSERT_EQ(wal->GetReport().at_or_before["t"]["delivered"].count, Kept(2))
      << "the scenario: RocksDB kept the batch or not";
  expect_report_matches("after the reopen");

  ASSERT_TRUE(wal->SaveCommitPoints({1'000'050, {}}).ok());
  expect_report_matches("after the retry");
  Report r = wal->GetReport();
  EXPECT_EQ(r.commit_point_ms, 1'000'050);
  EXPECT_EQ(r.at_or_before["t"]["delivered"].count, 2u);
  EXPECT_EQ(r.at_or_before["t"]["expired"].count, 1u);
  EXPECT_EQ(r.after["u"]["delivered"].count, 1u);

  wal.reset();  // restart
  wal = OpenWal();
  expect_report_matches("after the restart");
  EXPECT_EQ(wal->GetReport().commit_point_ms, 1'000'050);
  ExpectLedgerHolds(wal.get(), "after the restart");
}

TEST(WalSettle, OutcomesForEntriesNotLiveChangeNothingAlsoAfterARestart) {
  kspool::testing::TempDir dir;
  Options o;
  o.dir = dir.path();
  auto wal = std::move(Wal::Open(o)).value();
  ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "v")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  auto discard = [&](const Entry& x) {
    return SettleDiscarded(x.seq, "t", x.size, "expired", "old", EncodeRecord(x.record), 0);
  };
  ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[2], e[5]})).ok());
  ASSERT_TRUE(wal->Settle({discard(e[6])}).ok());
  const TopicStats before = wal->GetStats().topics["t"];

  // Below the head, above it but settled already (delivered, and discarded), a discard
  // of a delivered one, a sequence number never written, and one live entry twice.
  std::vector<Outcome> again = Delivered({e[1], e[5], e[7], e[7]});
  again.push_back(discard(e[6]));
  again.push_back(discard(e[0]));
  again.push_back(discard(e[5]));
  again.push_back(SettleDelivered(4242, "t", 10, 0));
  ASSERT_TRUE(wal->Settle(again).ok());
  TopicStats t = wal->GetStats().topics["t"];
  EXPECT_EQ(t.delivered.count, before.delivered.count + 1) << "only e[7], once";
  EXPECT_EQ(t.delivered.bytes, before.delivered.bytes + e[7].size);
  EXPECT_EQ(t.discarded["expired"].count, 1u);
  std::vector<DeadLetter> dead;
  ASSERT_TRUE(wal->ScanDeadLetters(0, 100, &dead).ok());
  ASSERT_EQ(dead.size(), 1u) << "no dead letter for an entry that is not live";
  EXPECT_EQ(dead[0].seq, e[6].seq);
  ExpectLedgerHolds(wal.get(), "after the repeat");

  // After a restart the memory no longer knows which entries above the head were
  // settled: the log does, whether the drain scanned it first (the scan tells the gaps)
  // or not (the entries are looked up).
  for (bool scan_first : {true, false}) {
    SCOPED_TRACE(scan_first ? "scanned after the restart" : "not scanned after the restart");
    wal.reset();
    wal = std::move(Wal::Open(o)).value();
    if (scan_first) {
      EXPECT_EQ(ScanAll(wal.get()).size(), 4u);  // e[3], e[4], e[8], e[9]
    }
    const TopicStats restarted = wal->GetStats().topics["t"];
    ASSERT_TRUE(wal->Settle(again).ok());
    t = wal->GetStats().topics["t"];
    EXPECT_EQ(t.delivered.count, restarted.delivered.count);
    EXPECT_EQ(t.discarded["expired"].count, 1u);
    ExpectLedgerHolds(wal.get(), "after the restart");
  }
  const uint64_t delivered = wal->GetStats().topics["t"].delivered.count;
  ASSERT_TRUE(wal->Settle(Delivered({e[3], e[4], e[8]})).ok());
  EXPECT_EQ(wal->GetStats().topics["t"].delivered.count, delivered + 3)
      << "live entries below the restart's high-water mark are settled as usual";
  ExpectLedgerHolds(wal.get(), "after settling the rest");
  EXPECT_EQ(ScanAll(wal.get()).size(), 1u);
}

// An outcome that is neither delivered nor discarded with a reason cannot be stored
// (the index keeps a state byte and a discard by its reason): the whole batch is refused.
TEST(WalSettle, RefusesABatchWithAnOutcomeThatIsNeitherDeliveredNorADiscardWithAReason) {
  kspool::testing::TempDir dir;
  Options o;
  o.dir = dir.path();
  auto wal = std::move(Wal::Open(o)).value();
  ASSERT_TRUE(wal->Append(MakeBatch("t", 3, "v")).ok());
  std::vector<Entry> e = ScanAll(wal.get());
  std::vector<Outcome> pending = Delivered(e);
  pending[1].state = Outcome::State::kPending;
  EXPECT_EQ(wal->Settle(pending).code(), absl::StatusCode::kInvalidArgument);
  std::vector<Outcome> no_reason = Delivered(e);
  no_reason[2] = SettleDiscarded(e[2].seq, "t", e[2].size, "", "why", EncodeRecord(e[2].record));
  EXPECT_EQ(wal->Settle(no_reason).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScanAll(wal.get()).size(), 3u) << "nothing settled";
  EXPECT_EQ(wal->GetStats().topics["t"].delivered.count, 0u);
  ASSERT_TRUE(wal->Settle(Delivered(e)).ok());
  EXPECT_EQ(ScanAll(wal.get()).size(), 0u);
}

TEST(WalSettle, PendingSaturatesInsteadOfWrapping) {
  TopicStats t;
  t.accepted = {2, 20};
  t.delivered = {2, 20};
  t.discarded["expired"] = {1, 10};
  EXPECT_EQ(t.pending().count, 0u);
  EXPECT_EQ(t.pending().bytes, 0u);
}

}  // namespace
}  // namespace kspool::wal
