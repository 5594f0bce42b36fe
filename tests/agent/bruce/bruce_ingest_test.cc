// BruceIngest on a real WAL: what it appends (topic, key, value, client timestamp,
// PartitionKey's partition), what it refuses and counts, and its flow control: a WAL
// that refuses appends makes Flush() wait and retry, nothing read is dropped.
#include "agent/bruce/bruce_ingest.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/bruce_format.h"
#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::agent {
namespace {

using kspool::testing::AnyPartition;
using kspool::testing::PartitionKey;

constexpr int64_t kTs = 1'700'000'000'000;

class BruceIngestTest : public ::testing::Test {
 protected:
  void Open(uint64_t max_bytes = 0, std::shared_ptr<rocksdb::FileSystem> fs = nullptr) {
    wal::Options o;
    o.dir = dir_.sub("wal");
    o.max_bytes = max_bytes;
    if (fs) o.env = kspool::testing::EnvFor(fs);
    wal_ = std::move(wal::Wal::Open(o)).value();
  }
  void SetUp() override {
    Open();
    PartitionCacheOptions po;
    po.background = false;
    partitions_ = std::make_unique<PartitionCache>(
        [this](const std::string& topic) -> absl::StatusOr<std::vector<bool>> {
          if (topic == "missing") return absl::NotFoundError("no such topic");
          return std::vector<bool>(static_cast<size_t>(partition_count_.load()), true);
        },
        po);
  }
  std::unique_ptr<BruceIngest> Ingest(size_t max_inflight = 4) {
    BruceIngestOptions o;
    o.partitions = partitions_.get();
    o.max_inflight_appends = max_inflight;
    o.retry_after_ms = [](absl::StatusCode) { return int64_t{20}; };
    return std::make_unique<BruceIngest>(wal_.get(), &rejections_, o);
  }
  // As the listener does when idle: Flush() now and then retries what was refused,
  // until `n` messages are appended (or 20 s passed).
  static void FlushUntilAppended(BruceIngest* ingest, uint64_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ingest->appended() < n && std::chrono::steady_clock::now() < until) {
      ingest->Flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Until the WAL refused an append and nothing is in its hands (or 20 s passed).
  static bool WaitUntilRefused(const BruceIngest* ingest) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!ingest->Refused() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return ingest->Refused();
  }
  std::vector<wal::Entry> Entries() {
    std::vector<wal::Entry> e;
    absl::Status s = wal_->Scan(0, 100000, 64 << 20, &e);
    EXPECT_TRUE(s.ok()) << s;
    return e;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<wal::Wal> wal_;
  std::atomic<int> partition_count_{3};
  std::unique_ptr<PartitionCache> partitions_;
  BruceRejections rejections_{nullptr, SystemClock::Default()};
};

TEST_F(BruceIngestTest, AppendsAnyPartitionWithKeyValueAndClientTimestamp) {
  auto ingest = Ingest();
  ingest->Accept(AnyPartition("orders", kTs, "k", "v1"), BruceTransport::kDatagram, 65536);
  ingest->Accept(AnyPartition("orders", kTs + 1, "", "v2"), BruceTransport::kTcp, 65536);
  ingest->Flush();
  ingest.reset();  // waits for the append
  std::vector<wal::Entry> e = Entries();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].record.topic, "orders");
  EXPECT_EQ(e[0].record.partition, -1);
  EXPECT_EQ(e[0].record.key, "k");
  EXPECT_EQ(e[0].record.value, "v1");
  EXPECT_EQ(e[0].record.client_timestamp_ms, kTs);
  EXPECT_FALSE(e[1].record.key.has_value()) << "an empty key is no key";
  EXPECT_EQ(e[1].record.client_timestamp_ms, kTs + 1);
}

TEST_F(BruceIngestTest, PartitionKeyChoosesTheKeyAsUint32ModuloThePartitionCount) {
  auto ingest = Ingest();
  for (int32_t key : {0, 1, 2, 4, -1, INT32_MIN}) {
    ingest->Accept(PartitionKey(key, "t", kTs, "kk", "v"), BruceTransport::kStream, 65536);
  }
  ingest.reset();
  std::vector<wal::Entry> e = Entries();
  ASSERT_EQ(e.size(), 6u);
  const std::vector<int32_t> want = {
      0, 1, 2, 1, static_cast<int32_t>(4294967295u % 3), static_cast<int32_t>(2147483648u % 3)};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(e[i].record.partition, want[i]) << i;
  EXPECT_EQ(e[0].record.key, "kk") << "the Kafka key is carried apart from the partition key";
}

TEST_F(BruceIngestTest, PartitionKeyForATopicKafkaDoesNotHaveIsABadTopic) {
  auto ingest = Ingest();
  ingest->Accept(PartitionKey(1, "missing", kTs, "", "v"), BruceTransport::kDatagram, 65536);
  ingest.reset();
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(rejections_.count(BruceReject::kBadTopic), 1u);
}

TEST_F(BruceIngestTest, RefusesKeyPlusValueAboveMaxMessageBytesAsTooLong) {
  BruceIngestOptions o;
  o.partitions = partitions_.get();
  o.limits.max_message_bytes = 10;
  auto ingest = std::make_unique<BruceIngest>(wal_.get(), &rejections_, o);
  ingest->Accept(AnyPartition("t", kTs, "12345", "67890"), BruceTransport::kDatagram, 65536);
  ingest->Accept(AnyPartition("t", kTs, "12345", "678901"), BruceTransport::kDatagram, 65536);
  ingest.reset();
  EXPECT_EQ(Entries().size(), 1u);
  EXPECT_EQ(rejections_.count(BruceReject::kTooLong), 1u);
}

TEST_F(BruceIngestTest, RefusesATimestampBeforeTheEpochAsMalformed) {
  auto ingest = Ingest();
  ingest->Accept(AnyPartition("t", -5, "", "v"), BruceTransport::kDatagram, 65536);
  ingest.reset();
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(rejections_.count(BruceReject::kMalformed), 1u);
}

TEST_F(BruceIngestTest, KeepsTheFirstBytesOfTheLatestRefusalsForTheReport) {
  auto ingest = Ingest();
  const std::string big(1000, 'x');
  for (size_t i = 0; i < BruceRejections::kKeptPerReason + 3; ++i) {
    ingest->Accept(big, BruceTransport::kStream, 65536);
  }
  kspool::v1::GetDiscardReportResponse report;
  rejections_.AddTo(&report);
  ASSERT_EQ(report.bruce_rejected_size(), 6);
  EXPECT_EQ(report.bruce_rejected(0).reason(), "malformed");
  EXPECT_EQ(report.bruce_rejected(0).count(), BruceRejections::kKeptPerReason + 3);
  ASSERT_EQ(report.bruce_recent_size(), static_cast<int>(BruceRejections::kKeptPerReason));
  EXPECT_EQ(report.bruce_recent(0).first_bytes(), big.substr(0, 256));
  EXPECT_EQ(report.bruce_recent(0).size(), 1000u);
  EXPECT_EQ(report.bruce_recent(0).transport(), "stream");
}

TEST_F(BruceIngestTest, AWalThatRefusesMakesFlushWaitAndRetryWithoutDroppingAnything) {
  // A WAL with room for a few records only: the rest is refused (RESOURCE_EXHAUSTED)
  // until room is made.
  wal_.reset();
  Open(2000);
  auto ingest = Ingest(1);
  std::atomic<bool> flushed{false};
  std::thread reader([&] {
    for (int i = 0; i < 40; ++i) {
      ingest->Accept(
          AnyPartition("t", kTs, "", "value-" + std::to_string(i) + std::string(80, 'p')),
          BruceTransport::kDatagram, 65536);
      ingest->Flush();
    }
    flushed = true;
    // As the listener does when idle: Flush() now and then retries what was refused.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ingest->appended() < 40 && std::chrono::steady_clock::now() < until) {
      ingest->Flush();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(flushed.load()) << "the reader must be held while the WAL refuses";
  // Make room: settle everything appended so far, again and again, until all 40 are in.
  // Each time only once the WAL refuses again with no append in its hands, so that this
  // thread's RocksDB writes never overlap the committer's (RocksDB merges concurrent
  // writes with synchronization ThreadSanitizer cannot see in the uninstrumented library).
  uint64_t settled = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (settled < 40 && std::chrono::steady_clock::now() < deadline) {
    if (ingest->appended() == 40) break;
    if (!ingest->Refused()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    std::vector<wal::Entry> e = Entries();
    std::vector<wal::Outcome> out;
    for (const wal::Entry& x : e) {
      wal::Outcome o = wal::Outcome::Delivered(x.seq, x.record.topic, -1, -1);
      o.size = x.size;
      o.receive_time_ms = x.record.receive_time_ms;
      out.push_back(o);
    }
    if (!out.empty()) {
      ASSERT_TRUE(wal_->Settle(out).ok());
      settled += out.size();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reader.join();
  ingest.reset();
  settled += Entries().size();
  EXPECT_EQ(settled, 40u);
  EXPECT_EQ(rejections_.count(BruceReject::kMalformed), 0u);
}

// A failed sync whose write RocksDB kept (a reopen replays it): the batch is in the WAL,
// and appending it again would store each message twice under two sequence numbers.
// The ingest waits for the reopen, asks the WAL whether it kept the write, and does not
// append it again.
TEST_F(BruceIngestTest, ABatchWhoseSyncFailedIsNotAppendedTwiceWhenTheWalKeptIt) {
  auto fs = std::make_shared<kspool::testing::FaultInjectionFileSystem>();
  wal_.reset();
  Open(0, fs);
  auto ingest = Ingest(1);
  const std::string marker = "in-doubt-batch-in-doubt-batch-";
  fs->FailSyncOfWrite(marker);
  std::thread reader([&] {
    for (int i = 0; i < 3; ++i) {
      ingest->Accept(AnyPartition("t", kTs, "", marker + std::to_string(i)),
                     BruceTransport::kDatagram, 65536);
    }
    FlushUntilAppended(ingest.get(), 3);
  });
  // The drain reopens the WAL after a write error; here this thread does, once the
  // append has failed and nothing is in the WAL's hands.
  ASSERT_TRUE(WaitUntilRefused(ingest.get())) << "the injected sync failure did not happen";
  EXPECT_EQ(fs->injected_sync_failures(), 1u);
  EXPECT_FALSE(wal_->health().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // retries meanwhile wait
  ASSERT_TRUE(wal_->Reopen().ok());
  reader.join();
  EXPECT_EQ(ingest->appended(), 3u);
  ingest.reset();
  std::vector<wal::Entry> e = Entries();
  ASSERT_EQ(e.size(), 3u) << "the batch the WAL kept was appended again";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(e[i].record.value, marker + std::to_string(i));
}

// The same failure when RocksDB did not keep the write (the log file's append itself
// failed): after the reopen the batch is appended again, once.
TEST_F(BruceIngestTest, ABatchWhoseWriteFailedIsAppendedAgainWhenTheWalLostIt) {
  auto fs = std::make_shared<kspool::testing::FaultInjectionFileSystem>();
  wal_.reset();
  Open(0, fs);
  auto ingest = Ingest(1);
  const std::string value = "lost-batch";
  std::thread reader([&] {
    ingest->Accept(AnyPartition("t", kTs, "", value), BruceTransport::kDatagram, 65536);
    fs->FailNextAppends(1, /*no_space=*/false);
    FlushUntilAppended(ingest.get(), 1);
  });
  ASSERT_TRUE(WaitUntilRefused(ingest.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // retries meanwhile wait
  EXPECT_EQ(ingest->appended(), 0u);
  ASSERT_TRUE(wal_->Reopen().ok());
  reader.join();
  EXPECT_EQ(ingest->appended(), 1u);
  ingest.reset();
  std::vector<wal::Entry> e = Entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].record.value, value);
}

}  // namespace
}  // namespace kspool::agent
