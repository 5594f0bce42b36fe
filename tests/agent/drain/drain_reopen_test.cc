// The drain across a WAL reopen (after a failed sync): the reader starts again at the
// head while the window keeps its entries; every entry still in the WAL is read again
// or held in the window, and the commit point stays below it meanwhile.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "tests/agent/drain/drain_fixture.h"
#include "tests/support/fault_fs.h"

namespace kspool::agent {
namespace {

class DrainReopen : public testing::DrainFixture {
 protected:
  // A WAL on a file system that can fail syncs, in place of the fixture's.
  void UseFaultyWal() {
    wal::Options o;
    o.dir = dir_.sub("faulty-wal");
    o.clock = &clock_;
    o.env = kspool::testing::EnvFor(fs_);
    absl::StatusOr<std::unique_ptr<wal::Wal>> w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    ReplaceWal(std::move(w).value());
  }
  // Appends one message for `partition` of "t"; its sequence number and receive time.
  std::pair<uint64_t, int64_t> AppendOne(int32_t partition) {
    const uint64_t seq = wal_->GetStats().next_seq;
    const int64_t receive_ms = Append("t", 1, {}, partition);
    clock_.Advance(5);  // each entry its own receive time
    return {seq, receive_ms};
  }
  bool Delivered(uint64_t seq) const {
    return std::any_of(kafka_.delivered.begin(), kafka_.delivered.end(),
                       [&](const testing::FakeKafka::Produced& p) { return p.seq == seq; });
  }

  std::shared_ptr<kspool::testing::FaultInjectionFileSystem> fs_ =
      std::make_shared<kspool::testing::FaultInjectionFileSystem>();
};

// Partition 0 has no leader and holds its share of the window (one entry), so its next
// entry is left unread while partition 1's newer ones are read. The WAL is reopened;
// the reader starts at the head again, a key at a time. Before it reaches the unread
// entry, partition 1 loses its leader and one of its entries leaves the window: the
// topic is marked unread from that newer entry. The older one, met by the reader next,
// must still be read (once partition 0 has a leader) and hold the commit point until
// then (found by drain_sim, seed 940547185960: defect 10).
TEST_F(DrainReopen, EntryLeftUnreadBeforeAReopenIsReadAgainAndHoldsTheCommitPoint) {
  UseFaultyWal();
  kafka_.leaders["t"] = {false, true};
  {
    DrainOptions o;
    o.max_inflight_messages = 4;  // a leaderless partition's share: one entry
    o.scan_max_keys = 1;          // the reader looks at one key per pass
    o.commit_point_interval_ms = 10;
    StartDrain(o);
  }
  AppendOne(0);                                       // in the window, waiting for a leader
  const auto [unread_seq, unread_ms] = AppendOne(0);  // left unread: p0 holds its share
  const uint64_t p1_first = AppendOne(1).first;
  kafka_.hold = {p1_first, p1_first + 1};  // partition 1's stay in the client
  AppendOne(1);
  Run(20);
  ASSERT_EQ(kafka_.produced.size(), 2u) << drain_->DebugString();

  // Partition 1 loses its leader: within a second its entries are taken back from the
  // client, into their lane (two entries, above its share of one).
  kafka_.leaders["t"][1] = false;
  for (int i = 0; i < 300 && kafka_.purges == 0; ++i) Run(1);
  ASSERT_EQ(kafka_.purges, 1);
  kafka_.hold.clear();

  // A failed sync: the drain reopens the WAL at its next pass.
  fs_->FailNextSyncs(1);
  wal::AppendBatch b;
  wal::RecordView v;
  v.topic = "t";
  v.value = "lost or not";
  v.partition = 1;
  b.Add(v);
  ASSERT_FALSE(wal_->Append(std::move(b)).ok());
  const uint64_t reopens = wal_->reopens();
  Run(20);
  ASSERT_GT(wal_->reopens(), reopens);

  kafka_.leaders["t"] = {true, true};
  for (int i = 0; i < 300; ++i) {
    Run(1);
    if (Delivered(unread_seq)) break;
    ASSERT_LT(tracker_->Current().topics_ms["t"], unread_ms)
        << "pass " << i << ": the commit point passed seq " << unread_seq
        << ", still in the WAL\n"
        << drain_->DebugString();
  }
  Run(100);
  EXPECT_TRUE(Delivered(unread_seq)) << drain_->DebugString();
  EXPECT_EQ(Live("t"), 0u) << drain_->DebugString();
}

}  // namespace
}  // namespace kspool::agent
