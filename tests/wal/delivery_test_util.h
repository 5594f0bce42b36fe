// The fixture of the delivery-index tests: a WAL on a fault-injecting file system with a
// manual clock, and outcomes as the drain reports them (partition, offset, time).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/fault_fs.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/delivery_record.h"
#include "wal/wal.h"

namespace kspool::wal {

class DeliveryTest : public ::testing::Test {
 protected:
  using State = Outcome::State;
  static constexpr int64_t kStart = 1'700'000'000'000;

  std::unique_ptr<Wal> OpenWal(const std::function<void(Options*)>& tweak = nullptr) {
    Options o = options();
    if (tweak) tweak(&o);
    auto wal = Wal::Open(o);
    EXPECT_TRUE(wal.ok()) << wal.status();
    return wal.ok() ? std::move(wal).value() : nullptr;
  }
  Options options() {
    Options o;
    o.dir = dir_.path();
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    o.delivery_retention_ms = 0;  // tests that trim set their limits
    o.delivery_retention_bytes = 0;
    return o;
  }
  // Appends n messages to `topic`; returns them as stored.
  static std::vector<Entry> Append(Wal* wal, int n, const std::string& topic = "t") {
    auto r = wal->Append(MakeBatch(topic, n, "v"));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    std::vector<Entry> out;
    EXPECT_TRUE(wal->Scan(r->first_seq, n, 1u << 30, &out).ok());
    return out;
  }
  // Outcomes: delivered to `partition` at offsets first_offset, +1, ... in entry order.
  static std::vector<Outcome> Deliver(const std::vector<Entry>& entries, int32_t partition,
                                      int64_t first_offset, int64_t time_ms = 0) {
    std::vector<Outcome> out = Delivered(entries);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].partition = partition;
      out[i].offset = first_offset + static_cast<int64_t>(i);
      out[i].time_ms = time_ms;
    }
    return out;
  }
  static Outcome Discard(const Entry& e, const std::string& reason, const std::string& error) {
    return SettleDiscarded(e.seq, e.record.topic, e.size, reason, error, EncodeRecord(e.record),
                           e.record.receive_time_ms);
  }
  static std::vector<Outcome> Lookup(Wal* wal, const std::vector<uint64_t>& seqs) {
    std::vector<Outcome> out;
    absl::Status s = wal->LookupDeliveries(seqs, &out);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
  static Outcome Lookup(Wal* wal, uint64_t seq) {
    std::vector<Outcome> d = Lookup(wal, std::vector<uint64_t>{seq});
    return d.empty() ? Outcome{} : d[0];
  }
  // Every outcome ScanDeliveries yields from `from`, max_entries at a time; *next_out gets
  // where it stopped.
  static std::vector<Outcome> ScanFeed(Wal* wal, uint64_t from, size_t max_entries,
                                        uint64_t* next_out = nullptr) {
    std::vector<Outcome> all;
    uint64_t next = from;
    for (int calls = 0; calls < 100000; ++calls) {
      const size_t before = all.size();
      absl::Status s = wal->ScanDeliveries(next, max_entries, &all, &next);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok() || all.size() == before) break;
    }
    if (next_out) *next_out = next;
    return all;
  }
  static std::vector<uint64_t> Seqs(const std::vector<Outcome>& d) {
    std::vector<uint64_t> out;
    for (const Outcome& x : d) out.push_back(x.seq);
    return out;
  }
  // The stored bytes of `runs` as the index counts them (key + value).
  static uint64_t StoredBytes(const std::vector<DeliveryRun>& runs) {
    uint64_t n = 0;
    for (const DeliveryRun& r : runs) n += 8 + EncodeDeliveryRun(r).size();
    return n;
  }

  // Appends 10 entries of `topic` and settles the first 5 as delivered to partition 0
  // (offsets 0-4); the sync of the settle of the other 5 (offsets 5-9, returned) fails,
  // and the WAL reopens: RocksDB kept that batch, or with `power_cut` a cut dropped it.
  // `*entries` gets the 10; `before_reopen` runs between the failure and the reopen.
  std::vector<Outcome> SettleHalfThenFailTheSync(Wal* wal, const std::string& topic, bool power_cut,
                                                 std::vector<Entry>* entries,
                                                 const std::function<void()>& before_reopen = {}) {
    *entries = Append(wal, 10, topic);
    const std::vector<Entry>& e = *entries;
    EXPECT_TRUE(wal->Settle(Deliver(std::vector<Entry>(e.begin(), e.begin() + 5), 0, 0)).ok());
    fs_->FailNextForegroundSyncs(1);  // the settle's, not a background compaction's
    std::vector<Outcome> rest = Deliver(std::vector<Entry>(e.begin() + 5, e.end()), 0, 5);
    EXPECT_EQ(wal->Settle(rest).code(), absl::StatusCode::kUnavailable);
    if (before_reopen) before_reopen();
    if (power_cut) fs_->CutPowerWhile([&] { EXPECT_FALSE(wal->Reopen().ok()); });
    EXPECT_TRUE(wal->Reopen().ok());
    EXPECT_EQ(Lookup(wal, e[5].seq).state, power_cut ? State::kPending : State::kDelivered)
        << "the scenario";
    return rest;
  }

  kspool::testing::TempDir dir_;
  ManualClock clock_{kStart};
  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

}  // namespace kspool::wal
