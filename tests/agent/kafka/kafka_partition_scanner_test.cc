// PartitionScanner against a kspool-devkafka cluster: which records are this agent's,
// where a scan starts and ends, its byte bound, a start by time, and the requests it
// refuses. The faults (no leader, Kafka down, the time budget, retention) are in
// kafka_partition_scanner_fault_test.cc.
#include "agent/kafka/kafka_partition_scanner.h"

#include <gtest/gtest.h>

#include <chrono>

#include "agent/kafka/kafka_producer.h"
#include "agent/kafka/kafka_scan_record.h"
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

using ScannerFinds = ScannerTest;

TEST(KspoolSeq, OnlyPlainDecimalsThatFitIn64BitsAreRead) {
  EXPECT_EQ(agent::ParseKspoolSeq("0"), 0u);
  EXPECT_EQ(agent::ParseKspoolSeq("42"), 42u);
  EXPECT_EQ(agent::ParseKspoolSeq("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1x", "0x10", "18446744073709551616",
                          "99999999999999999999999"}) {
    EXPECT_FALSE(agent::ParseKspoolSeq(bad).has_value()) << "'" << bad << "'";
  }
}

TEST_F(ScannerFinds, ThisAgentsRecordsWithTheirOffsetsAndNoOneElses) {
  StartKafka({"t:1"});
  const std::vector<int64_t> offsets = ProduceRecords(
      kafka_->bootstrap(), "t", 0,
      {Ours(11), With({{"kspool.agent", "fedcba9876543210"}, {"kspool.seq", "12"}}), With({}),
       With({{"kspool.agent", kAgent}, {"kspool.seq", "12x"}}), Ours(13),
       With({{"kspool.agent", kAgent}}), With({{"kspool.seq", "14"}}),
       With({{"kspool.agent", std::string(kAgent) + "0"}, {"kspool.seq", "15"}}),
       With({{"other", "x"}, {"kspool.agent", kAgent}, {"kspool.seq", "16"}}), Ours(17),
       // The first of a header counts: the producer writes its own before the client's.
       With({{"kspool.agent", "fedcba9876543210"},
             {"kspool.seq", "18"},
             {"kspool.agent", kAgent},
             {"kspool.seq", "19"}})});
  ASSERT_EQ(offsets.size(), 11u);
  auto scanner = NewScanner();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 0), ScanLimits{}, kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  const std::vector<FoundRecord> want = {
      {11, offsets[0]}, {13, offsets[4]}, {16, offsets[8]}, {17, offsets[9]}};
  EXPECT_EQ(scan->found, want);
  EXPECT_EQ(scan->malformed, 2u);  // "12x", and no kspool.seq at all
  EXPECT_EQ(scan->records, 11u);
  EXPECT_EQ(scan->end, ScanEnd::kReachedEnd);
  EXPECT_EQ(scan->start_offset, 0);
  EXPECT_EQ(scan->last_offset, offsets[10]);
  EXPECT_EQ(scan->next_offset, offsets[10] + 1);
  EXPECT_EQ(scan->high_watermark, offsets[10] + 1);
  EXPECT_FALSE(scan->below_log_start);
  EXPECT_GT(scan->bytes, 10u * (1 + 10));  // values and header names at least
}

TEST_F(ScannerFinds, WhatTheAgentsProducerWroteInEveryPartitionAskedFor) {
  StartKafka({"t:3"});
  agent::ProducerConfig pc;
  pc.brokers = kafka_->bootstrap();
  pc.agent_id = kAgent;
  auto producer = agent::KafkaProducer::Create(pc);
  ASSERT_TRUE(producer.ok()) << producer.status();
  std::vector<wal::Entry> entries(9);
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].seq = 100 + i;
    entries[i].record.topic = "t";
    entries[i].record.value = "value " + std::to_string(i);
    entries[i].record.receive_time_ms = 1;
    ASSERT_EQ((*producer)->Produce(entries[i], static_cast<int32_t>(i % 3)).result,
              agent::DeliveryResult::kQueued);
  }
  std::vector<agent::DeliveryReport> reports;
  for (auto deadline = steady_clock::now() + 20s;
       reports.size() < entries.size() && steady_clock::now() < deadline;) {
    (*producer)->Poll(100, &reports);
  }
  ASSERT_EQ(reports.size(), entries.size());
  std::map<int32_t, std::vector<FoundRecord>> want;
  for (const agent::DeliveryReport& r : reports) {
    ASSERT_EQ(r.result, agent::DeliveryResult::kDelivered) << r.error;
    want[r.partition].push_back({r.seq, r.offset});
  }
  for (auto& [p, found] : want) {
    std::sort(found.begin(), found.end(),
              [](const FoundRecord& a, const FoundRecord& b) { return a.offset < b.offset; });
  }
  auto scanner = NewScanner();
  auto scan = scanner->ScanTopic(
      "t", {ScanStart::AtOffset(2, 0), ScanStart::AtOffset(0, 0), ScanStart::AtOffset(1, 0)},
      ScanLimits{}, kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  ASSERT_EQ(scan->partitions.size(), 3u);
  EXPECT_TRUE(scan->complete());
  for (const PartitionScan& p : scan->partitions) {
    ASSERT_TRUE(p.status.ok()) << p.status;
    EXPECT_EQ(p.found, want[p.partition]) << "partition " << p.partition;
  }
  EXPECT_EQ(scan->partitions[0].partition, 2);  // in the order asked
  EXPECT_EQ(scan->bytes,
            scan->partitions[0].bytes + scan->partitions[1].bytes + scan->partitions[2].bytes);
  // Another agent's id finds nothing in the same records.
  auto other = scanner->Scan("t", ScanStart::AtOffset(0, 0), ScanLimits{}, "fedcba9876543210");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->found.empty());
  EXPECT_EQ(other->records, 3u);
}

TEST_F(ScannerFinds, OnlyFromTheStartOffsetOn) {
  StartKafka({"t:1"});
  std::vector<TestRecord> records;
  for (uint64_t seq = 1; seq <= 10; ++seq) records.push_back(Ours(seq));
  const std::vector<int64_t> offsets = ProduceRecords(kafka_->bootstrap(), "t", 0, records);
  ASSERT_EQ(offsets.back(), 9);
  auto scanner = NewScanner();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 4), ScanLimits{}, kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  std::vector<FoundRecord> want;
  for (int64_t o = 4; o <= 9; ++o) want.push_back({static_cast<uint64_t>(o + 1), o});
  EXPECT_EQ(scan->found, want);
  EXPECT_EQ(scan->records, 6u);
  EXPECT_EQ(scan->start_offset, 4);
  EXPECT_EQ(scan->next_offset, 10);
}

TEST_F(ScannerFinds, NothingInAnEmptyPartitionOrFromItsEndAndReturnsAtOnce) {
  StartKafka({"t:2"});
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 1, {Ours(1), Ours(2)}).size(), 2u);
  auto scanner = NewScanner();
  const auto start = steady_clock::now();
  auto scan = scanner->ScanTopic("t", {ScanStart::AtOffset(0, 0), ScanStart::AtOffset(1, 2)},
                                 ScanLimits{}, kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_LT(steady_clock::now() - start, 3s) << "waited for records that never come";
  ASSERT_TRUE(scan->complete());
  for (const PartitionScan& p : scan->partitions) {
    EXPECT_EQ(p.records, 0u) << p.partition;
    EXPECT_TRUE(p.found.empty()) << p.partition;
    EXPECT_EQ(p.end, ScanEnd::kReachedEnd);
    EXPECT_EQ(p.next_offset, p.high_watermark);
  }
  EXPECT_EQ(scan->partitions[0].high_watermark, 0);
  EXPECT_EQ(scan->partitions[1].high_watermark, 2);
}

TEST_F(ScannerFinds, NoMoreThanTheByteBoundAndSaysWhereToGoOn) {
  StartKafka({"t:1"});
  std::vector<TestRecord> records;
  for (uint64_t seq = 1; seq <= 200; ++seq) records.push_back(Ours(seq, std::string(1000, 'x')));
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, records).back(), 199);
  auto scanner = NewScanner();
  ScanLimits limits;
  limits.max_bytes = 20000;
  auto first = scanner->Scan("t", ScanStart::AtOffset(0, 0), limits, kAgent);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->end, ScanEnd::kByteBound);
  EXPECT_GE(first->bytes, 20000u);
  EXPECT_LT(first->bytes, 20000u + 1100u) << "read more than one record past the bound";
  EXPECT_EQ(first->records, first->found.size());
  EXPECT_EQ(first->next_offset, first->last_offset + 1);
  EXPECT_LT(first->next_offset, 200);
  // Going on from there reads the rest: together, every record once.
  auto rest = scanner->Scan("t", ScanStart::AtOffset(0, first->next_offset), ScanLimits{}, kAgent);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->end, ScanEnd::kReachedEnd);
  std::vector<FoundRecord> all = first->found;
  all.insert(all.end(), rest->found.begin(), rest->found.end());
  ASSERT_EQ(all.size(), 200u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i], (FoundRecord{i + 1, static_cast<int64_t>(i)}));
  }
}

TEST_F(ScannerFinds, NothingFromAStartTimeAfterEveryRecord) {
  // kspool-devkafka (librdkafka 2.0.2's mock) answers every ListOffsets by time with -1,
  // "no record at or after it", so only that answer can be seen here: the scan starts at
  // the end rather than at the beginning.
  StartKafka({"t:1"});
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  TestRecord old = Ours(1);
  old.timestamp_ms = now_ms - 3600 * 1000;
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, {old, old, old}).back(), 2);
  auto scanner = NewScanner();
  auto scan = scanner->Scan("t", ScanStart::AtTime(0, now_ms), ScanLimits{}, kAgent);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->start_offset, 3);
  EXPECT_EQ(scan->records, 0u);
  EXPECT_TRUE(scan->found.empty());
  EXPECT_EQ(scan->end, ScanEnd::kReachedEnd);
}

TEST_F(ScannerFinds, NothingBeyondTheEndWhichIsOutOfRange) {
  StartKafka({"t:1"});
  ASSERT_EQ(ProduceRecords(kafka_->bootstrap(), "t", 0, {Ours(1), Ours(2)}).back(), 1);
  auto scanner = NewScanner();
  auto scan = scanner->Scan("t", ScanStart::AtOffset(0, 5), ScanLimits{}, kAgent);
  EXPECT_EQ(scan.status().code(), absl::StatusCode::kOutOfRange) << scan.status();
}

TEST_F(ScannerFinds, NothingForABadRequestWhichIsAnInvalidArgument) {
  StartKafka({"t:2"});
  auto scanner = NewScanner();
  const ScanLimits ok;
  ScanLimits no_bytes;
  no_bytes.max_bytes = 0;
  ScanLimits no_time;
  no_time.time_budget_ms = 0;
  const ScanStart p0 = ScanStart::AtOffset(0, 0);
  struct Case {
    std::string topic, agent;
    std::vector<ScanStart> starts;
    ScanLimits limits;
  };
  for (const Case& c : std::vector<Case>{{"", kAgent, {p0}, ok},
                                         {"t", "", {p0}, ok},
                                         {"t", kAgent, {}, ok},
                                         {"t", kAgent, {p0, ScanStart::AtOffset(0, 3)}, ok},
                                         {"t", kAgent, {ScanStart::AtOffset(-1, 0)}, ok},
                                         {"t", kAgent, {ScanStart{1, -1, -1}}, ok},
                                         {"t", kAgent, {p0}, no_bytes},
                                         {"t", kAgent, {p0}, no_time}}) {
    auto scan = scanner->ScanTopic(c.topic, c.starts, c.limits, c.agent);
    EXPECT_EQ(scan.status().code(), absl::StatusCode::kInvalidArgument) << scan.status();
  }
}

TEST_F(ScannerFinds, NothingWithABadOptionWhoseSecretIsNotShown) {
  StartKafka({"t:1"});
  // The producer's own options are taken (librdkafka ignores the producer-only ones).
  EXPECT_NE(NewScanner({"linger.ms=7", "acks=all", "group.id=g", "client.id=x"}), nullptr);
  auto bad = agent::PartitionScanner::Create(kafka_->bootstrap(),
                                             {"sasl.password=hunter2", "no.such.thing=hunter2"});
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_EQ(bad.status().message().find("hunter2"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("no.such.thing"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace kspool::testing
