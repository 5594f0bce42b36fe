// The drain on a real WAL in a temp dir, a scripted Kafka (fake_producer.h) and a manual
// clock, driven one pass at a time (RunOnce): deterministic; metadata lookups can be
// made to fail; the drain reads through a PartialScanLog (tests/support), which can fail
// a chosen scan part way.
// Thread safety: none; a test and its drain run on one thread.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/drain/drain_loop.h"
#include "tests/agent/drain/fake_producer.h"
#include "tests/support/partial_scan_log.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::testing {

class DrainFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    wal::Options o;
    o.dir = dir_.sub("wal");
    o.clock = &clock_;
    absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    wal_ = std::move(w).value();
    log_ = std::make_unique<PartialScanLog>(wal_.get());
    tracker_ = std::make_unique<agent::CommitTracker>(wal_.get());
    agent::PartitionCacheOptions pco;
    pco.background = false;
    pco.clock = &clock_;
    agent::LayoutSource layouts = kafka_.Layouts();
    cache_ = std::make_unique<agent::PartitionCache>(
        [this, layouts](const std::string& topic) -> absl::StatusOr<std::vector<bool>> {
          if (metadata_fails_) return absl::DeadlineExceededError("scripted metadata timeout");
          return layouts(topic);
        },
        pco);
  }

  // Puts `w` in place of the fixture's WAL, with a new commit tracker (before StartDrain).
  void ReplaceWal(std::unique_ptr<wal::Wal> w) {
    tracker_.reset();
    log_.reset();
    wal_ = std::move(w);
    log_ = std::make_unique<PartialScanLog>(wal_.get());
    tracker_ = std::make_unique<agent::CommitTracker>(wal_.get());
  }

  void StartDrain(agent::DrainOptions o = {}) {
    o.clock = &clock_;
    o.partitions = cache_.get();
    drain_ = std::make_unique<agent::DrainLoop>(log_.get(), tracker_.get(), kafka_.Factory(), o);
    ASSERT_TRUE(drain_->Start(/*background=*/false).ok());
  }

  // Appends n messages of `value_bytes` each (0: a short value naming the topic), keyed
  // keys[i % keys.size()] when keys are given. Returns the receive time.
  int64_t Append(const std::string& topic, int n, std::vector<std::string> keys = {},
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
    return r.ok() ? r->receive_time_ms : 0;
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

  static std::vector<std::string> KeysFor(int partition, int partitions, int n) {
    std::vector<std::string> keys;
    for (int i = 0; static_cast<int>(keys.size()) < n; ++i) {
      std::string k = "key-" + std::to_string(i);
      if (agent::KeyPartition(k, partitions) == partition) keys.push_back(k);
    }
    return keys;
  }

  bool metadata_fails_ = false;  // every metadata lookup times out while set
  TempDir dir_;
  ManualClock clock_{1'800'000'000'000};
  FakeKafka kafka_;
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<PartialScanLog> log_;
  std::unique_ptr<agent::CommitTracker> tracker_;
  std::unique_ptr<agent::PartitionCache> cache_;
  std::unique_ptr<agent::DrainLoop> drain_;
};

}  // namespace kspool::testing
