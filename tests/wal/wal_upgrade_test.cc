// Upgrade in place: today's WAL code opens a WAL directory written by an earlier release
// (tests/wal/fixtures/, kept byte for byte; wal_fixture.h says what it holds), reads
// every live entry as it was written, keeps every counter, outcome, dead letter,
// watermark, routing bound and commit point, and drains it. One fixture was closed
// cleanly, the other left as a crash leaves it (RocksDB's log replayed at open).
#include <gtest/gtest.h>

#include "base/clock.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/fixtures/wal_fixture.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

class WalUpgrade : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { fixture::CopyTo(GetParam(), dir_.path()); }
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{fixture::kT0 + 3'600'000};
};

TEST_P(WalUpgrade, EveryLiveEntryReadsAsItWasWritten) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal);
  const std::vector<fixture::Message> messages = fixture::Messages();
  std::vector<Entry> entries = ScanAll(wal.get());
  std::vector<uint64_t> seqs;
  for (const Entry& e : entries) {
    seqs.push_back(e.seq);
    ASSERT_TRUE(e.status.ok()) << "seq " << e.seq << ": " << e.status;
    const Record& want = messages.at(e.seq - 1).record;
    EXPECT_EQ(e.record.topic, want.topic) << e.seq;
    EXPECT_EQ(e.record.partition, want.partition) << e.seq;
    EXPECT_EQ(e.record.key, want.key) << e.seq;
    EXPECT_EQ(e.record.value, want.value) << e.seq;
    EXPECT_EQ(e.record.headers, want.headers) << e.seq;
    EXPECT_EQ(e.record.client_timestamp_ms, want.client_timestamp_ms) << e.seq;
    EXPECT_EQ(e.record.receive_time_ms, messages.at(e.seq - 1).receive_time_ms) << e.seq;
  }
  EXPECT_EQ(seqs, fixture::LiveSeqs());
  Stats s = wal->GetStats();
  EXPECT_EQ(s.next_seq, 13u);
  EXPECT_EQ(s.oldest_seq, std::optional<uint64_t>(3));
}

TEST_P(WalUpgrade, CountersOutcomesAndDeadLettersAreKept) {
  auto wal = OpenWal();
  ASSERT_TRUE(wal);
  Stats s = wal->GetStats();
  EXPECT_EQ(s.entries, 8u);
  EXPECT_EQ(s.topics["orders"].accepted.count, 8u);
  EXPECT_EQ(s.topics["orders"].delivered.count, 2u);
  EXPECT_EQ(s.topics["orders"].pending().count, 6u);
  EXPECT_EQ(s.topics["events"].accepted.count, 4u);
  EXPECT_EQ(s.topics["events"].delivered.count, 1u);
  EXPECT_EQ(s.topics["events"].discarded[fixture::kDiscardReason].count, 1u);
  EXPECT_EQ(s.topics["events"].pending().count, 2u);
  ExpectLedgerHolds(wal.get(), "at open");

  std::vector<Outcome> outcomes;
  ASSERT_TRUE(wal->LookupDeliveries({1, 2, 3, 7, 8, 13}, &outcomes).ok());
  ASSERT_EQ(outcomes.size(), 6u);
  EXPECT_EQ(outcomes[0].state, Outcome::State::kDelivered);
  EXPECT_EQ(outcomes[0].partition, 0);
  EXPECT_EQ(outcomes[0].offset, 10);
  EXPECT_EQ(outcomes[1].offset, 20);
  EXPECT_EQ(outcomes[2].state, Outcome::State::kPending);
  EXPECT_EQ(outcomes[3].topic, "events");
  EXPECT_EQ(outcomes[3].partition, 3);
  EXPECT_EQ(outcomes[3].offset, 5);
  EXPECT_EQ(outcomes[4].state, Outcome::State::kDiscarded);
  EXPECT_EQ(outcomes[4].discard_reason, fixture::kDiscardReason);
  EXPECT_EQ(outcomes[5].state, Outcome::State::kUnknown);

  std::vector<DeadLetter> dead;
  ASSERT_TRUE(wal->ScanDeadLetters(0, 100, &dead).ok());
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].seq, fixture::kDiscardedSeq);
  EXPECT_EQ(dead[0].reason, fixture::kDiscardReason);
  EXPECT_EQ(dead[0].error_text, fixture::kDiscardError);
  absl::StatusOr<Record> raw = DecodeRecord(dead[0].raw);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->value, fixture::Messages()[fixture::kDiscardedSeq - 1].record.value);

  absl::StatusOr<std::vector<Watermark>> marks = wal->Watermarks();
  ASSERT_TRUE(marks.ok()) << marks.status();
  EXPECT_EQ(*marks,
            (std::vector<Watermark>{{"events", 3, 5}, {"orders", 0, 10}, {"orders", 1, 20}}));
  absl::StatusOr<std::vector<RoutingBound>> bounds = wal->RoutingBounds("orders");
  ASSERT_TRUE(bounds.ok()) << bounds.status();
  EXPECT_EQ(*bounds, (std::vector<RoutingBound>{{1, 4}}));
  CommitPoints points = wal->SavedCommitPoints();
  EXPECT_EQ(points.global_ms, fixture::kOrdersPoint);
  EXPECT_EQ(points.topics_ms["orders"], fixture::kOrdersPoint);
  EXPECT_EQ(points.topics_ms["events"], fixture::kEventsPoint);
}

TEST_P(WalUpgrade, DrainsToEmptyAndTakesNewAppends) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal);
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
    auto appended = wal->Append(MakeBatch("orders", 2, "new"));
    ASSERT_TRUE(appended.ok()) << appended.status();
    EXPECT_EQ(appended->first_seq, 13u);
    EXPECT_GT(appended->receive_time_ms, fixture::kSettleTime);
  }
  auto wal = OpenWal();
  ASSERT_TRUE(wal);
  std::vector<Entry> entries = ScanAll(wal.get());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].record.value, "new0");
  Stats s = wal->GetStats();
  EXPECT_EQ(s.topics["orders"].accepted.count, 10u);
  EXPECT_EQ(s.topics["orders"].delivered.count, 8u);
  EXPECT_EQ(s.topics["events"].delivered.count, 3u);
  ExpectLedgerHolds(wal.get(), "after the drain");
}

INSTANTIATE_TEST_SUITE_P(Fixture, WalUpgrade, ::testing::ValuesIn(fixture::Dirs()),
                         [](const auto& info) { return fixture::TestName(info.param); });

}  // namespace
}  // namespace kspool::wal
