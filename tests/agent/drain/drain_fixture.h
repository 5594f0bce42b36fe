// DrainFixture: a DrainLoop on a real WAL in a temp dir, a scripted Kafka
// (fake_producer.h), a partition cache without a thread and a manual clock, for the
// drain's unit tests that drive the loop one pass at a time.
// Thread safety: none; one test thread.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/drain/drain_loop.h"
#include "tests/agent/drain/fake_producer.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::agent {

class DrainFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    wal::Options o;
    o.dir = dir_.sub("wal");
    o.clock = &clock_;
    absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    wal_ = std::move(w).value();
    tracker_ = std::make_unique<CommitTracker>(wal_.get());
    PartitionCacheOptions pco;
    pco.background = false;
    pco.clock = &clock_;
    cache_ = std::make_unique<PartitionCache>(kafka_.Layouts(), pco);
  }

  void StartDrain(DrainOptions o = {}) {
    o.clock = &clock_;
    o.partitions = cache_.get();
    drain_ = std::make_unique<DrainLoop>(wal_.get(), tracker_.get(), kafka_.Factory(), o);
    ASSERT_TRUE(drain_->Start(/*background=*/false).ok());
  }

  // Appends n messages of `value_bytes` each (0: a short value naming the topic);
  // keys[i % keys.size()] when keys are given.
  void Append(const std::string& topic, int n, std::vector<std::string> keys = {},
              int32_t partition = -1, size_t value_bytes = 0) {
    wal::AppendBatch b;
    std::vector<std::string> values(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      values[i] = value_bytes ? std::string(value_bytes, 'v') : topic + "-" + std::to_string(i);
      wal::RecordView v;
      v.topic = topic;
      v.value = values[i];
      v.partition = partition;
      if (!keys.empty()) v.key = keys[static_cast<size_t>(i) % keys.size()];
      b.Add(v);
    }
    absl::StatusOr<wal::AppendResult> r = wal_->Append(std::move(b));
    EXPECT_TRUE(r.ok()) << r.status();
  }

  // `passes` passes of the loop, `step_ms` of time passing after each.
  void Run(int passes, int64_t step_ms = 10) {
    for (int i = 0; i < passes; ++i) {
      drain_->RunOnce(0);
      clock_.Advance(step_ms);
    }
  }

  uint64_t Live(const std::string& topic) {
    std::map<std::string, wal::Counts> live;
    EXPECT_TRUE(wal_->CountLive(&live).ok());
    return live[topic].count;
  }

  // n keys that map to `partition` of `partitions`.
  static std::vector<std::string> KeysFor(int partition, int partitions, int n) {
    std::vector<std::string> keys;
    for (int i = 0; static_cast<int>(keys.size()) < n; ++i) {
      std::string k = "key-" + std::to_string(i);
      if (KeyPartition(k, partitions) == partition) keys.push_back(k);
    }
    return keys;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{1'800'000'000'000};
  testing::FakeKafka kafka_;
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<CommitTracker> tracker_;
  std::unique_ptr<PartitionCache> cache_;
  std::unique_ptr<DrainLoop> drain_;
};

}  // namespace kspool::agent
