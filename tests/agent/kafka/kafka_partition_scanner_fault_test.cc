// PartitionScanner when Kafka cannot give it everything: a partition without a leader,
// Kafka down, a slow cluster against the time budget, a log start past the start offset,
// unknown topics and partitions. Each scan ends within its budget.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "agent/kafka/kafka_partition_scanner.h"
#include "tests/agent/kafka/scan_test_records.h"

namespace kspool::testing {
namespace {

using agent::FoundRecord;
using agent::PartitionScan;
using agent::ScanEnd;
using agent::ScanLimits;
using agent::ScanStart;
using std::chrono::steady_clock;
using namespace std::chrono_literals;

using ScannerFaults = ScannerTest;

ScanLimits Budget(std::chrono::milliseconds ms) {
  ScanLimits l;
  l.time_budget_ms = ms.count();
  return l;
}

TEST_F(ScannerFaults, APartitionWithoutALeaderIsUnavailableAndTheOthersAreRead) {
  StartKafka({"t:2"});
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, {Ours(1), Ours(2)}).back(), 1);
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 1, {Ours(3)}).back(), 0);
  ASSERT_EQ(kafka_->Command("leader t 1 none"), "OK");
  auto scanner = NewScanner();
  const auto start = steady_clock::now();
  auto scan = scanner->ScanTopic("t", {ScanStart::AtOffset(0, 0), ScanStart::AtOffset(1, 0)},
                                 Budget(5s), kAgent);
  EXPECT_LT(steady_clock::now() - start, 5s + 1s);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_FALSE(scan->complete());
  const PartitionScan& p0 = scan->partitions[0];
  ASSERT_TRUE(p0.status.ok()) << p0.status;
  EXPECT_EQ(p0.end, ScanEnd::kReachedEnd);
  EXPECT_EQ(p0.found, (std::vector<FoundRecord>{{1, 0}, {2, 1}}));
  EXPECT_EQ(scan->partitions[1].status.code(), absl::StatusCode::kUnavailable)
      << scan->partitions[1].status;

  const auto alone = steady_clock::now();
  auto one = scanner->Scan("t", ScanStart::AtOffset(1, 0), Budget(5s), kAgent);
  EXPECT_LT(steady_clock::now() - alone, 5s + 1s);
  EXPECT_EQ(one.status().code(), absl::StatusCode::kUnavailable) << one.status();
  // With its leader back it is read.
  ASSERT_EQ(kafka_->Command("leader t 1 2"), "OK");
  auto back = scanner->Scan("t", ScanStart::AtOffset(1, 0), Budget(10s), kAgent);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->found, (std::vector<FoundRecord>{{3, 0}}));
}

TEST_F(ScannerFaults, KafkaDownIsUnavailableWithinTheBudget) {
  StartKafka({"t:1"});
  auto scanner = NewScanner();
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  const auto start = steady_clock::now();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), Budget(3s), kAgent);
  EXPECT_LT(steady_clock::now() - start, 3s + 1s);
  EXPECT_EQ(scan.status().code(), absl::StatusCode::kUnavailable) << scan.status();
}

TEST_F(ScannerFaults, ASlowClusterEndsTheScanAtTheTimeBudgetWithWhatWasRead) {
  StartKafka({"t:1"});
  std::vector<TestRecord> records;
  for (uint64_t seq = 1; seq <= 40; ++seq) records.push_back(Ours(seq));
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, records, /*separate_batches=*/true).back(),
            39);
  // One batch per fetch (the mock answers a fetch with one batch), each answer 300 ms late.
  ASSERT_EQ(kafka_->Command("broker rtt all 300"), "OK");
  auto scanner = NewScanner();
  const auto start = steady_clock::now();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), Budget(4s), kAgent);
  const auto took = steady_clock::now() - start;
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->end, ScanEnd::kTimeBudget);
  EXPECT_GE(took, 4s - 100ms);
  EXPECT_LT(took, 4s + 1s);
  EXPECT_GT(scan->records, 0u) << "the budget left time to read some";
  EXPECT_LT(scan->next_offset, 40);
  EXPECT_EQ(scan->found.size(), scan->records);
  for (size_t i = 0; i < scan->found.size(); ++i) {
    EXPECT_EQ(scan->found[i], (FoundRecord{i + 1, static_cast<int64_t>(i)}));
  }
  EXPECT_EQ(scan->next_offset, static_cast<int64_t>(scan->records));
}

TEST_F(ScannerFaults, AStartBelowTheLogStartBeginsThereAndSaysSo) {
  StartKafka({"t:1"});
  // The mock keeps 5 MB of batches per partition: 8 batches of about 1 MB move its log start.
  std::vector<TestRecord> records;
  for (uint64_t seq = 1; seq <= 8; ++seq) records.push_back(Ours(seq, std::string(900000, 'x')));
  const std::vector<int64_t> offsets =
      ProduceRecords(kafka_->bootstrap(), "t", 0, records, /*separate_batches=*/true);
  ASSERT_EQ(offsets.back(), 7);
  auto scanner = NewScanner();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), ScanLimits{}, kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->below_log_start);
  ASSERT_GT(scan->log_start, 0) << "the mock kept every batch: the test needs more bytes";
  EXPECT_EQ(scan->start_offset, scan->log_start);
  EXPECT_EQ(scan->end, ScanEnd::kReachedEnd);
  std::vector<FoundRecord> want;
  for (int64_t o = scan->log_start; o <= 7; ++o) want.push_back({static_cast<uint64_t>(o + 1), o});
  EXPECT_EQ(scan->found, want);
  // A start at or above the log start is not flagged.
  auto from = scanner->Scan("t", ScanStart::AtOffset(0, scan->log_start), ScanLimits{}, kAgent);
  ASSERT_TRUE(from.ok()) << from.status();
  EXPECT_FALSE(from->below_log_start);
  EXPECT_EQ(from->found, want);
}

TEST_F(ScannerFaults, RecordsProducedDuringTheScanAreNotWaitedForNorRead) {
  StartKafka({"t:1"});
  std::vector<TestRecord> records;
  for (uint64_t seq = 1; seq <= 6; ++seq) records.push_back(Ours(seq));
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, records, /*separate_batches=*/true).back(),
            5);
  ASSERT_EQ(kafka_->Command("broker rtt all 400"), "OK");  // one batch per fetch: 2.4 s
  auto scanner = NewScanner();
  absl::StatusOr<PartitionScan> scan;
  std::thread scanning(
      [&] { scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), Budget(30s), kAgent); });
  std::this_thread::sleep_for(1500ms);
  std::vector<TestRecord> later;
  for (uint64_t seq = 7; seq <= 12; ++seq) later.push_back(Ours(seq));
  EXPECT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, later, true).back(), 11);
  scanning.join();
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->high_watermark, 6);
  EXPECT_EQ(scan->next_offset, 6);
  EXPECT_EQ(scan->end, ScanEnd::kReachedEnd);
  std::vector<FoundRecord> want;
  for (int64_t o = 0; o < 6; ++o) want.push_back({static_cast<uint64_t>(o + 1), o});
  EXPECT_EQ(scan->found, want);
}

TEST_F(ScannerFaults, ALogStartPassingTheReadPositionDuringTheScanIsSaidAndTheScanGoesOn) {
  StartKafka({"t:1"});
  std::vector<TestRecord> records;
  for (uint64_t seq = 1; seq <= 10; ++seq) records.push_back(Ours(seq, std::string(450000, 'x')));
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, records, /*separate_batches=*/true).back(),
            9);
  // One batch per fetch, 500 ms each: the scan takes 5 s or more to read the ten.
  ASSERT_EQ(kafka_->Command("broker rtt all 500"), "OK");
  auto scanner = NewScanner();
  absl::StatusOr<PartitionScan> scan;
  std::thread scanning(
      [&] { scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), Budget(30s), kAgent); });
  // Meanwhile 12 more push the first ten out of the mock's 5 MB.
  std::this_thread::sleep_for(2s);
  std::vector<TestRecord> more(12, With({}, std::string(450000, 'y')));
  EXPECT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, more).back(), 21);
  scanning.join();
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->below_log_start);
  EXPECT_GE(scan->log_start, 10);
  EXPECT_EQ(scan->end, ScanEnd::kReachedEnd);
  EXPECT_EQ(scan->high_watermark, 10);
  EXPECT_EQ(scan->next_offset, 10);
  ASSERT_LT(scan->found.size(), 10u) << "read them all before the log start moved";
  for (size_t i = 0; i < scan->found.size(); ++i) {
    EXPECT_EQ(scan->found[i], (FoundRecord{i + 1, static_cast<int64_t>(i)}));
  }
}

TEST_F(ScannerFaults, AReadPositionOutOfRangeOfALogThatDidNotMoveIsOutOfRange) {
  StartKafka({"t:1"});
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, {Ours(1), Ours(2)}).back(), 1);
  // What a broker says of an offset after an unclean leader election shortened the log.
  ASSERT_EQ(kafka_->Command("request error Fetch 1 OFFSET_OUT_OF_RANGE"), "OK");
  auto scanner = NewScanner();
  const auto start = steady_clock::now();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), Budget(5s), kAgent);
  EXPECT_LT(steady_clock::now() - start, 5s + 1s);
  EXPECT_EQ(scan.status().code(), absl::StatusCode::kOutOfRange) << scan.status();
}

TEST_F(ScannerFaults, AnUnknownTopicOrPartitionIsNotFound) {
  StartKafka({"t:2"});
  // The mock cluster would create a topic asked for; this one it says does not exist.
  ASSERT_EQ(kafka_->Command("topic error nope UNKNOWN_TOPIC_OR_PART"), "OK");
  auto scanner = NewScanner();
  auto topic = scanner->Scan("nope", ScanStart::AtOffset(0, 0), Budget(5s), kAgent);
  EXPECT_EQ(topic.status().code(), absl::StatusCode::kNotFound) << topic.status();
  auto scan = scanner->ScanTopic("t", {ScanStart::AtOffset(0, 0), ScanStart::AtOffset(2, 0)},
                                 Budget(5s), kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_TRUE(scan->partitions[0].status.ok()) << scan->partitions[0].status;
  EXPECT_EQ(scan->partitions[1].status.code(), absl::StatusCode::kNotFound)
      << scan->partitions[1].status;
}

}  // namespace
}  // namespace kspool::testing
