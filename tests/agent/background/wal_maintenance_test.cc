// WalMaintenance: one round trims the dead letters beyond their limits and forgets idle
// topics, and the metrics show both.
#include "agent/background/wal_maintenance.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/keys.h"

namespace kspool::agent {
namespace {

constexpr int64_t kDay = 86'400'000;

class WalMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    wal_.reset();
    wal::Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.max_dead_letter_age_ms = 7 * kDay;
    o.topic_idle_forget_ms = kDay;
    wal_ = std::move(wal::Wal::Open(o)).value();
    agent::MetricSources sources;
    sources.wal = wal_.get();
    sources.clock = &clock_;
    metrics_.SetSources(std::move(sources));
  }
  bool MetricsHave(const std::string& line) {
    return metrics_.Serialize().find(line) != std::string::npos;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  std::unique_ptr<wal::Wal> wal_;
  Metrics metrics_{"test"};
};

TEST_F(WalMaintenanceTest, ARoundRemovesExpiredDeadLettersAndForgetsIdleTopics) {
  ASSERT_TRUE(wal_->Append(wal::MakeBatch("gone", 3, "v")).ok());
  std::vector<wal::Outcome> discards;
  for (const wal::Entry& e : wal::ScanAll(wal_.get())) {
    discards.push_back(wal::SettleDiscarded(e.seq, e.record.topic, e.size, "msg_size_too_large",
                                            "too big", wal::EncodeRecord(e.record),
                                            e.record.receive_time_ms));
  }
  ASSERT_TRUE(wal_->Settle(discards).ok());
  EXPECT_TRUE(MetricsHave("kspool_dead_letters 3"));
  EXPECT_TRUE(MetricsHave("kspool_tracked_topics 1"));

  WalMaintenance m(wal_.get(), &metrics_);
  clock_.Advance(7 * kDay - 1);
  m.RunOnce();
  EXPECT_EQ(wal_->GetStats().dead_letters.count, 3u) << "not yet seven days old";
  EXPECT_EQ(wal_->GetStats().tracked_topics, 0u) << "but idle for more than a day";

  clock_.Advance(1);
  m.RunOnce();
  EXPECT_EQ(wal_->GetStats().dead_letters.count, 0u);
  EXPECT_TRUE(MetricsHave("kspool_dead_letters 0"));
  // The forgotten topic's counters stay, summed with every other forgotten topic's: the
  // page holds no series per name once a topic is forgotten.
  EXPECT_TRUE(
      MetricsHave("kspool_dead_letters_dropped_total{topic=\"(forgotten)\",limit=\"age\"} 3"))
      << metrics_.Serialize();
  EXPECT_TRUE(MetricsHave("kspool_tracked_topics 0"));
  EXPECT_TRUE(MetricsHave("kspool_topics_forgotten_total 1"));
  EXPECT_TRUE(MetricsHave("kspool_messages_discarded_total{topic=\"(forgotten)\","
                          "reason=\"msg_size_too_large\"} 3"))
      << "still counted as discarded";
  EXPECT_FALSE(MetricsHave("topic=\"gone\"")) << metrics_.Serialize();
}

// A delivery tally whose stored bytes do not parse starts again from 0: counted in the
// metrics (and logged by the round) rather than stopping the settles.
TEST_F(WalMaintenanceTest, ADamagedDeliveryTallyIsCountedInTheMetrics) {
  auto deliver = [&] {
    std::vector<wal::Outcome> d = wal::Delivered(wal::ScanAll(wal_.get()));
    for (wal::Outcome& o : d) o.partition = 0;
    return wal_->Settle(d);
  };
  ASSERT_TRUE(wal_->Append(wal::MakeBatch("t", 1, "v")).ok());
  ASSERT_TRUE(deliver().ok());
  wal_.reset();
  ASSERT_TRUE(kspool::testing::WithRawWal(dir_.path(), [](rocksdb::DB* db,
                                                          kspool::testing::RawHandles& cf) {
                return db->Put(rocksdb::WriteOptions(), cf.at("meta"), wal::keys::Tally("t", 0),
                               "damaged");
              }).ok());
  Open();
  EXPECT_TRUE(MetricsHave("kspool_delivery_tallies_restarted_total 0"));
  ASSERT_TRUE(wal_->Append(wal::MakeBatch("t", 1, "v")).ok());
  ASSERT_TRUE(deliver().ok());
  EXPECT_TRUE(MetricsHave("kspool_delivery_tallies_restarted_total 1")) << metrics_.Serialize();
  WalMaintenance m(wal_.get(), &metrics_);
  m.RunOnce();  // logs the warning once
  EXPECT_EQ(wal_->GetStats().tallies_restarted, 1u);
}

TEST_F(WalMaintenanceTest, TheThreadRunsRoundsUntilStopped) {
  ASSERT_TRUE(wal_->Append(wal::MakeBatch("idle", 1, "v")).ok());
  ASSERT_TRUE(wal_->Settle(wal::Delivered(wal::ScanAll(wal_.get()))).ok());
  clock_.Advance(2 * kDay);
  WalMaintenance m(wal_.get(), &metrics_, std::chrono::milliseconds(5));
  m.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (wal_->GetStats().tracked_topics > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling, with a deadline
  }
  m.Stop();
  EXPECT_EQ(wal_->GetStats().tracked_topics, 0u);
}

// A scripted WAL for the reclaim rule: what the volume's state is, and which heads the
// dead range was compacted below.
class ScriptedSpace : public wal::Maintenance {
 public:
  absl::StatusOr<wal::DeadLetterTrim> TrimDeadLetters() override { return wal::DeadLetterTrim{}; }
  absl::StatusOr<wal::DeliveryTrim> TrimDeliveries() override { return wal::DeliveryTrim{}; }
  absl::StatusOr<std::vector<std::string>> ForgetIdleTopics() override {
    return std::vector<std::string>{};
  }
  absl::Status CompactDeadRange() override {
    compacted_below.push_back(head);
    return absl::OkStatus();
  }
  bool RestoreReserve() override { return false; }
  absl::Status health() const override { return absl::OkStatus(); }
  std::string agent_id() const override { return "scripted"; }
  wal::Stats GetStats() const override {
    wal::Stats s;
    s.next_seq = next;
    if (head < next) s.oldest_seq = head;
    s.entries = next - head;
    s.reserve_missing = reserve_missing;
    return s;
  }
  wal::CommitPoints SavedCommitPoints() const override { return {}; }
  std::vector<std::string> TrackedTopics() const override { return {}; }

  uint64_t head = 1, next = 1;
  bool reserve_missing = false;
  std::vector<uint64_t> compacted_below;
};

TEST_F(WalMaintenanceTest, TheBacklogAFullVolumeLeftIsCompactedAwayAfterTheReserveIsBack) {
  ScriptedSpace wal;
  WalMaintenance m(&wal, nullptr);
  wal.next = 1000;
  m.RunOnce();
  EXPECT_TRUE(wal.compacted_below.empty()) << "room on the volume: RocksDB's own compactions";
  wal.reserve_missing = true;
  wal.head = 100;
  m.RunOnce();
  m.RunOnce();
  EXPECT_EQ(wal.compacted_below, std::vector<uint64_t>({100})) << "once per head moved";
  // The reserve is back after part of the backlog was freed; the rest is still compacted
  // as it is delivered, up to what was written while the reserve was missing.
  wal.reserve_missing = false;
  wal.head = 400;
  wal.next = 1500;
  m.RunOnce();
  wal.head = 1000;
  m.RunOnce();
  wal.head = 1400;
  m.RunOnce();
  wal.head = 1500;
  m.RunOnce();
  EXPECT_EQ(wal.compacted_below, std::vector<uint64_t>({100, 400, 1000}));
}

}  // namespace
}  // namespace kspool::agent
