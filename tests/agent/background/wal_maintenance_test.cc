// WalMaintenance: one round trims the dead letters beyond their limits and forgets idle
// topics, and the metrics show both.
#include "agent/background/wal_maintenance.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::agent {
namespace {

constexpr int64_t kDay = 86'400'000;

class WalMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
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
  EXPECT_TRUE(MetricsHave("kspool_dead_letters_dropped_total{topic=\"gone\",limit=\"age\"} 3"))
      << metrics_.Serialize();
  EXPECT_TRUE(MetricsHave("kspool_tracked_topics 0"));
  EXPECT_TRUE(MetricsHave("kspool_topics_forgotten_total 1"));
  EXPECT_TRUE(MetricsHave("kspool_messages_discarded_total{topic=\"gone\","
                          "reason=\"msg_size_too_large\"} 3"))
      << "still counted as discarded";
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

}  // namespace
}  // namespace kspool::agent
