// The wal library's operator additions: read-only opening (writes nothing, refuses what
// is not a kspool WAL), the newest entry, and replaying or purging dead letters with the
// ledger accepted = delivered + discarded + pending intact.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "rocksdb/db.h"
#include "tests/ctl/dir_snapshot.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

using kspool::testing::DirSnapshot;

class WalAdminTest : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> Open(bool read_only = false) {
    absl::StatusOr<std::unique_ptr<Wal>> wal = TryOpen(dir_.path(), read_only);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  absl::StatusOr<std::unique_ptr<Wal>> TryOpen(const std::string& dir, bool read_only) {
    Options o;
    o.dir = dir;
    o.clock = &clock_;
    o.read_only = read_only;
    return Wal::Open(o);
  }
  // Appends `n` entries of `topic` and discards the one at `index` into the dead letters.
  uint64_t AppendAndDiscardOne(Wal* wal, const std::string& topic, int n, int index) {
    EXPECT_TRUE(wal->Append(MakeBatch(topic, n, "v")).ok());
    std::vector<Entry> entries = ScanAll(wal);
    const Entry& e = entries.at(static_cast<size_t>(index));
    EXPECT_TRUE(wal->Settle({SettleDiscarded(e.seq, topic, e.size, "msg_size_too_large", "too large",
                                             EncodeRecord(e.record), e.record.receive_time_ms)})
                    .ok());
    return e.seq;
  }
  static void ExpectLedgerHolds(const Stats& s) {
    uint64_t pending = 0;
    for (const auto& [topic, t] : s.topics) pending += t.pending().count;
    EXPECT_EQ(pending, s.entries);
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
};

TEST_F(WalAdminTest, ReadOnlyReadsEverythingAndWritesNothing) {
  {
    auto wal = Open();
    AppendAndDiscardOne(wal.get(), "t", 3, 1);
  }
  const auto before = DirSnapshot(dir_.path());
  {
    auto wal = Open(/*read_only=*/true);
    ASSERT_NE(wal, nullptr);
    EXPECT_EQ(ScanAll(wal.get()).size(), 2u);
    EXPECT_EQ(wal->GetStats().topics["t"].accepted.count, 3u);
    std::vector<DeadLetter> dead;
    ASSERT_TRUE(wal->ScanDeadLetters(0, 10, &dead).ok());
    EXPECT_EQ(dead.size(), 1u);
    auto newest = wal->Newest();
    ASSERT_TRUE(newest.ok() && newest->has_value());
    EXPECT_EQ((*newest)->seq, 3u);

    auto refused = [](const absl::Status& s) {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_NE(s.message().find("read-only"), std::string::npos) << s;
    };
    refused(wal->Append(MakeBatch("t", 1, "x")).status());
    refused(wal->Settle({SettleDelivered(1, "t", 10)}));
    refused(wal->SaveCommitPoints({1, {}}));
    refused(wal->Reopen());
    refused(wal->CompactDeadRange());
    refused(wal->ReplayDeadLetters({2}).status());
    refused(wal->PurgeDeadLetters({2}));
  }
  EXPECT_EQ(DirSnapshot(dir_.path()), before);
}

TEST_F(WalAdminTest, ReadOnlyRefusesWhatIsNotAKspoolWal) {
  const std::string missing = dir_.sub("missing");
  auto r = TryOpen(missing, true);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_FALSE(std::filesystem::exists(missing)) << "nothing is created";

  const std::string empty = dir_.sub("empty");
  std::filesystem::create_directory(empty);
  r = TryOpen(empty, true);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_NE(r.status().message().find("is not a kspool WAL"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(empty));

  const std::string plain = dir_.sub("plain");
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db;
    ASSERT_TRUE(rocksdb::DB::Open(o, plain, &db).ok());
    delete db;
  }
  r = TryOpen(plain, true);
  EXPECT_NE(r.status().message().find("no column family 'log'"), std::string::npos) << r.status();

  const std::string no_meta = dir_.sub("no_meta");
  {
    rocksdb::DBOptions o;
    o.create_if_missing = o.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{"default", {}}, {"log", {}}, {"meta", {}}, {"dead", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    rocksdb::DB* db;
    ASSERT_TRUE(rocksdb::DB::Open(o, no_meta, cfs, &h, &db).ok());
    for (auto* c : h) db->DestroyColumnFamilyHandle(c);
    delete db;
  }
  const auto before = DirSnapshot(no_meta);
  r = TryOpen(no_meta, true);
  EXPECT_NE(r.status().message().find("no format_version"), std::string::npos) << r.status();
  EXPECT_EQ(DirSnapshot(no_meta), before) << "LoadState wrote nothing";
}

TEST_F(WalAdminTest, ReadOnlyOpensAWalThatAWriterHolds) {
  auto writer = Open();
  ASSERT_TRUE(writer->Append(MakeBatch("t", 5, "v")).ok());
  auto reader = Open(/*read_only=*/true);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(ScanAll(reader.get()).size(), 5u);
  EXPECT_EQ(reader->agent_id(), writer->agent_id());
  ASSERT_TRUE(writer->Append(MakeBatch("t", 1, "later")).ok()) << "the writer is unaffected";
}

TEST_F(WalAdminTest, ReplayMovesDeadLettersBackUnderNewSequenceNumbers) {
  auto wal = Open();
  const uint64_t dead_seq = AppendAndDiscardOne(wal.get(), "t", 3, 1);
  const Record original = [&] {
    std::vector<DeadLetter> d;
    EXPECT_TRUE(wal->ScanDeadLetters(0, 10, &d).ok());
    return DecodeRecord(d.at(0).raw).value();
  }();
  clock_.Advance(5000);
  ASSERT_TRUE(wal->SaveCommitPoints({clock_.NowMillis() + 100, {}}).ok());

  auto replayed = wal->ReplayDeadLetters({dead_seq});
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  ASSERT_EQ(replayed->size(), 1u);
  EXPECT_EQ((*replayed)[0].dead_seq, dead_seq);
  EXPECT_EQ((*replayed)[0].seq, 4u) << "the next sequence number, never a reused one";
  EXPECT_EQ((*replayed)[0].topic, "t");
  EXPECT_GT((*replayed)[0].receive_time_ms, clock_.NowMillis() + 100)
      << "received after the saved commit point, so that point stays true";

  for (int reopen = 0; reopen < 2; ++reopen) {
    std::vector<Entry> entries = ScanAll(wal.get());
    ASSERT_EQ(entries.size(), 3u);
    const Entry& e = entries.back();
    EXPECT_EQ(e.seq, 4u);
    ASSERT_TRUE(e.status.ok()) << e.status;
    EXPECT_EQ(e.record.value, original.value);
    EXPECT_EQ(e.record.key, original.key);
    EXPECT_EQ(e.record.headers, original.headers);
    std::vector<DeadLetter> dead;
    ASSERT_TRUE(wal->ScanDeadLetters(0, 10, &dead).ok());
    EXPECT_TRUE(dead.empty());
    const Stats s = wal->GetStats();
    EXPECT_EQ(s.topics.at("t").accepted.count, 4u) << "accepted again";
    EXPECT_EQ(s.topics.at("t").discarded.at("msg_size_too_large").count, 1u) << "the discard stays";
    EXPECT_EQ(s.entries, 3u);
    EXPECT_EQ(s.next_seq, 5u);
    ExpectLedgerHolds(s);
    std::map<std::string, Counts> live;
    ASSERT_TRUE(wal->CountLive(&live).ok());
    EXPECT_EQ(live["t"].count, s.topics.at("t").pending().count);
    EXPECT_EQ(live["t"].bytes, s.topics.at("t").pending().bytes);
    wal.reset();
    wal = Open();  // persisted in the same batch
  }
  auto next = wal->Append(MakeBatch("t", 1, "after"));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->first_seq, 5u);
}

TEST_F(WalAdminTest, ReplayIsAllOrNothing) {
  auto wal = Open();
  const uint64_t dead_seq = AppendAndDiscardOne(wal.get(), "t", 2, 0);
  auto r = wal->ReplayDeadLetters({dead_seq, 99});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  // A quarantined record that does not decode cannot go back into the log.
  const Entry second = ScanAll(wal.get()).at(0);
  ASSERT_TRUE(
      wal->Settle({SettleDiscarded(second.seq, "t", second.size, "corrupt", "checksum", "garbage")})
          .ok());
  r = wal->ReplayDeadLetters({dead_seq, second.seq});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  std::vector<DeadLetter> dead;
  ASSERT_TRUE(wal->ScanDeadLetters(0, 10, &dead).ok());
  EXPECT_EQ(dead.size(), 2u) << "nothing moved";
  EXPECT_EQ(wal->GetStats().next_seq, 3u);
  EXPECT_EQ(wal->GetStats().entries, 0u);
}

TEST_F(WalAdminTest, PurgeDeletesDeadLettersAndKeepsTheirCount) {
  auto wal = Open();
  const uint64_t a = AppendAndDiscardOne(wal.get(), "t", 2, 0);
  EXPECT_EQ(wal->PurgeDeadLetters({a, 77}).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(wal->PurgeDeadLetters({a}).ok());
  std::vector<DeadLetter> dead;
  ASSERT_TRUE(wal->ScanDeadLetters(0, 10, &dead).ok());
  EXPECT_TRUE(dead.empty());
  const Stats s = wal->GetStats();
  EXPECT_EQ(s.topics.at("t").discarded.at("msg_size_too_large").count, 1u);
  ExpectLedgerHolds(s);
}

TEST_F(WalAdminTest, NewestOfAnEmptyLogIsNothing) {
  auto wal = Open();
  auto n = wal->Newest();
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_value());
}

TEST_F(WalAdminTest, ReplayWhileOthersAppendKeepsSequenceNumbersInOrder) {
  auto wal = Open();
  std::vector<uint64_t> dead;
  for (int i = 0; i < 20; ++i) dead.push_back(AppendAndDiscardOne(wal.get(), "d", 1, 0));
  std::atomic<bool> stop{false};
  std::thread appender([&] {
    while (!stop) {
      ASSERT_TRUE(wal->Append(MakeBatch("a", 3, "x")).ok());
    }
  });
  for (uint64_t seq : dead) ASSERT_TRUE(wal->ReplayDeadLetters({seq}).ok());
  stop = true;
  appender.join();
  std::vector<Entry> entries = ScanAll(wal.get());
  int64_t last_receive = 0;
  size_t replayed = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(entries[i - 1].seq, entries[i].seq);
    }
    EXPECT_GE(entries[i].record.receive_time_ms, last_receive) << "seq " << entries[i].seq;
    last_receive = entries[i].record.receive_time_ms;
    replayed += entries[i].record.topic == "d";
  }
  EXPECT_EQ(replayed, dead.size());
  const Stats s = wal->GetStats();
  EXPECT_EQ(s.entries, entries.size());
  ExpectLedgerHolds(s);
}

}  // namespace
}  // namespace kspool::wal
