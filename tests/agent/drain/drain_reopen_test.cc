// The drain across a WAL reopen (after a failed sync): the reader starts again where the
// failed writes began while the window keeps its entries; every entry still in the WAL
// is read again or held in the window, and the commit point stays below it meanwhile.
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

// A backlog of a leaderless partition's entries waits unread at the head of the log. A
// failed sync makes the drain reopen the WAL: the reader goes back to the failed append
// only (RocksDB may have kept it), not to the head, so an entry of a healthy topic
// appended after the reopen goes out within a few passes instead of after the reader has
// passed over the backlog again, two keys a pass (drain_sim seed 231783182910: 11
// reopens, each a new pass over the backlog, and an entry 34 s old never read). The
// backlog is still read once its leader is back.
TEST_F(DrainReopen, AReopenReadsAgainFromTheFailedWriteNotFromTheHead) {
  UseFaultyWal();
  kafka_.leaders["stuck"] = {false};
  kafka_.leaders["t"] = {true};
  {
    DrainOptions o;
    o.max_inflight_messages = 8;
    o.scan_max_keys = 2;
    StartDrain(o);
  }
  constexpr int kBacklog = 200;
  for (int i = 0; i < kBacklog; ++i) Append("stuck", 1, {}, 0);
  Run(2 * kBacklog);  // the reader passes the backlog once, leaving most of it unread
  ASSERT_EQ(Live("stuck"), static_cast<uint64_t>(kBacklog));

  fs_->FailNextForegroundSyncs(1);  // the append's, not a flush's
  wal::AppendBatch b;
  wal::RecordView v;
  v.topic = "t";
  v.value = "kept or not";
  b.Add(v);
  ASSERT_FALSE(wal_->Append(std::move(b)).ok());
  const uint64_t reopens = wal_->reopens();
  Run(1);
  ASSERT_EQ(wal_->reopens(), reopens + 1);
  EXPECT_GT(wal_->rescan_from(), static_cast<uint64_t>(kBacklog));

  const auto [seq, receive_ms] = AppendOne(0);
  int passes = 0;
  while (!Delivered(seq) && passes < kBacklog) {
    Run(1);
    ++passes;
  }
  EXPECT_LE(passes, 5) << "the reader passed over the backlog again\n" << drain_->DebugString();

  kafka_.leaders["stuck"] = {true};
  for (int i = 0; i < 20 * kBacklog && Live("stuck") + Live("t") > 0; ++i) Run(1);
  EXPECT_EQ(Live("stuck"), 0u) << drain_->DebugString();
  EXPECT_EQ(Live("t"), 0u) << drain_->DebugString();
}

}  // namespace
}  // namespace kspool::agent
