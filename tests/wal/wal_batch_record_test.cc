// Batch records (FORMAT.md, "Batch records" and "Settling part of a record"): a Send's
// consecutive messages of one topic share one log key; settling part of a record keeps
// a bitmap beside it; the settle of its last live message deletes both. Checked on the
// raw RocksDB directory as well as through the WAL's own reads.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/keys.h"
#include "wal/record.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

struct RawLog {
  std::vector<LogKey> records;              // the log's keys, parsed, in order
  std::map<std::string, std::string> bits;  // settled_in/ keys in meta -> bitmap
};

class WalBatchRecord : public ::testing::Test {
 protected:
  std::unique_ptr<Wal> OpenWal() {
    Options o;
    o.dir = dir_.path();
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  // The closed WAL's log keys and bitmaps, read behind its back.
  RawLog ReadRaw() {
    RawLog out;
    rocksdb::Status s = kspool::testing::WithRawWal(
        dir_.path(), [&](rocksdb::DB* db, kspool::testing::RawHandles& cf) {
          std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, cf.at("log")));
          for (it->SeekToFirst(); it->Valid(); it->Next()) {
            auto k = ParseLogKey(std::string_view(it->key().data(), it->key().size()));
            EXPECT_TRUE(k.has_value()) << "a log key of " << it->key().size() << " bytes";
            if (k) out.records.push_back(*k);
          }
          std::unique_ptr<rocksdb::Iterator> m(db->NewIterator({}, cf.at("meta")));
          for (m->Seek(keys::kSettledInPrefix);
               m->Valid() && m->key().starts_with(keys::kSettledInPrefix); m->Next()) {
            out.bits[m->key().ToString()] = m->value().ToString();
          }
          return it->status().ok() ? m->status() : it->status();
        });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  kspool::testing::TempDir dir_;
};

TEST_F(WalBatchRecord, ARequestsRunsOfOneTopicAreOneRecordEach) {
  {
    auto wal = OpenWal();
    AppendBatch b;
    for (const char* t : {"a", "a", "a", "b", "b", "a"}) {
      RecordView v;
      v.topic = t;
      v.value = "x";
      b.Add(v);
    }
    auto r = wal->Append(std::move(b));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->first_seq, 1u);
    std::vector<Entry> e = ScanAll(wal.get());
    ASSERT_EQ(e.size(), 6u);
    for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(e[i].seq, i + 1);
    EXPECT_EQ(e[3].record.topic, "b");
    EXPECT_EQ(e[5].record.topic, "a");
  }
  RawLog raw = ReadRaw();
  ASSERT_EQ(raw.records.size(), 3u);
  EXPECT_EQ(raw.records[0].first_seq, 1u);
  EXPECT_EQ(raw.records[0].count, 3u);
  EXPECT_EQ(raw.records[1].first_seq, 4u);
  EXPECT_EQ(raw.records[1].count, 2u);
  EXPECT_EQ(raw.records[2].first_seq, 6u);
  EXPECT_EQ(raw.records[2].count, 1u);
  for (const LogKey& k : raw.records) EXPECT_TRUE(k.batch);
}

// A reader that needs one message reads its whole record: records stop growing at about
// kBatchRecordTargetBytes, and a larger message is a record of its own.
TEST_F(WalBatchRecord, ARecordStopsGrowingAtItsTargetSize) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("small", 200, std::string(100, 's'))).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("large", 3, std::string(40 * 1024, 'l'))).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("huge", 2, std::string(100 * 1024, 'h'))).ok());
  }
  RawLog raw = ReadRaw();
  std::vector<uint32_t> counts;
  for (const LogKey& k : raw.records) counts.push_back(k.count);
  EXPECT_EQ(counts, (std::vector<uint32_t>{200, 1, 1, 1, 1, 1}));
  auto wal = OpenWal();
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 205u);
  EXPECT_EQ(e[204].record.value, std::string(100 * 1024, 'h') + "1");
}

TEST_F(WalBatchRecord, SettledMessagesOfAPartlySettledRecordStayGoneAcrossReopens) {
  std::vector<Entry> e;
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("t", 10, "v")).ok());
    e = ScanAll(wal.get());
    ASSERT_EQ(e.size(), 10u);
    ASSERT_TRUE(wal->Settle(Delivered({e[2], e[4], e[6]})).ok());
  }
  RawLog raw = ReadRaw();
  ASSERT_EQ(raw.records.size(), 1u) << "the record stays while messages of it are live";
  ASSERT_EQ(raw.bits.size(), 1u);
  EXPECT_EQ(raw.bits.begin()->second, std::string("\x54\x00", 2)) << "bits 2, 4 and 6";
  auto wal = OpenWal();
  std::vector<Entry> live = ScanAll(wal.get());
  std::vector<uint64_t> seqs;
  for (const Entry& x : live) seqs.push_back(x.seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 4, 6, 8, 9, 10}));
  EXPECT_EQ(live[2].record.value, "v3");
  EXPECT_EQ(wal->GetStats().entries, 7u);
  // A settle applied again (the drain's retry after a reply it did not see) counts once.
  ASSERT_TRUE(wal->Settle(Delivered({e[2], e[4]})).ok());
  EXPECT_EQ(wal->GetStats().topics["t"].delivered.count, 3u);
  ExpectLedgerHolds(wal.get(), "after the repeated settle");
}

TEST_F(WalBatchRecord, TheSettleOfItsLastLiveMessageDeletesTheRecordAndItsBitmap) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("t", 5, "v")).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("t", 3, "w")).ok());
    std::vector<Entry> e = ScanAll(wal.get());
    ASSERT_TRUE(wal->Settle(Delivered({e[0], e[1], e[5]})).ok());
    ASSERT_TRUE(wal->Settle(Delivered({e[2], e[3], e[4]})).ok());  // the first record's rest
    ASSERT_EQ(ScanAll(wal.get()).size(), 2u);
  }
  RawLog raw = ReadRaw();
  ASSERT_EQ(raw.records.size(), 1u);
  EXPECT_EQ(raw.records[0].first_seq, 6u);
  ASSERT_EQ(raw.bits.size(), 1u) << "only the second record's bitmap is left";
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Settle(Delivered(ScanAll(wal.get()))).ok());
    EXPECT_EQ(wal->GetStats().entries, 0u);
    ExpectLedgerHolds(wal.get(), "after the last settle");
  }
  raw = ReadRaw();
  EXPECT_TRUE(raw.records.empty());
  EXPECT_TRUE(raw.bits.empty());
}

// A record whose lengths are lost cannot be split into its messages: each is discarded
// as corrupt with an even share of the bytes, and the topic's ledger still ends exact.
TEST_F(WalBatchRecord, ARecordWhoseLayoutIsLostIsDiscardedMessageByMessageAndTheLedgerEndsExact) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("t", 4, "value-")).ok());
    ASSERT_TRUE(wal->Append(MakeBatch("u", 2, "ok")).ok());
  }
  ASSERT_TRUE(kspool::testing::EditLogEntry(dir_.path(), 2, [](std::string* v) {
                v->resize(v->size() - 3);  // truncated: the lengths no longer add up
              }).ok());
  auto wal = OpenWal();
  std::vector<Entry> e = ScanAll(wal.get());
  ASSERT_EQ(e.size(), 6u);
  std::vector<Outcome> outcomes;
  for (int i = 0; i < 4; ++i) {
    ASSERT_FALSE(e[i].status.ok()) << i;
    EXPECT_EQ(e[i].status.code(), absl::StatusCode::kDataLoss) << e[i].status;
    outcomes.push_back(SettleDiscarded(e[i].seq, SalvageTopic(e[i].raw), e[i].size, "corrupt",
                                       e[i].status.ToString(), e[i].raw));
  }
  EXPECT_EQ(e[4].record.value, "ok0");
  ASSERT_TRUE(wal->Settle(outcomes).ok());
  Stats s = wal->GetStats();
  EXPECT_EQ(s.topics["t"].discarded["corrupt"].count, 4u);
  EXPECT_EQ(s.topics["t"].pending().count, 0u);
  EXPECT_EQ(s.topics["t"].pending().bytes, 0u) << "charged what the topic owed, not the shares";
  EXPECT_EQ(s.topics.count(""), 0u);
  EXPECT_EQ(s.entries, 2u);
  ExpectLedgerHolds(wal.get(), "after the discard");
}

// A bitmap this build did not write (another length) settles nothing: its messages are
// delivered again rather than lost.
TEST_F(WalBatchRecord, ABitmapOfAnotherLengthLeavesEveryMessageLive) {
  {
    auto wal = OpenWal();
    ASSERT_TRUE(wal->Append(MakeBatch("t", 3, "v")).ok());
    ASSERT_TRUE(wal->Settle(Delivered({ScanAll(wal.get())[1]})).ok());
  }
  RawLog raw = ReadRaw();
  ASSERT_EQ(raw.bits.size(), 1u);
  const std::string key = raw.bits.begin()->first;
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [&](rocksdb::DB* db, auto& cf) {
                return db->Put(rocksdb::WriteOptions(), cf.at("meta"), key,
                               std::string("\x02\x00\x00", 3));
              }).ok());
  auto wal = OpenWal();
  EXPECT_EQ(ScanAll(wal.get()).size(), 3u);
}

}  // namespace
}  // namespace kspool::wal
