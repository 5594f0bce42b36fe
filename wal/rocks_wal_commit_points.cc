// RocksWal: commit points, made safe to publish with as few synced writes as possible.
// The points and the lease are kept by CommitLease (commit_lease.h); this file writes.
//
// A published point must never be undercut, also after a crash and a restart with the
// wall clock stepped back. Writing each point before publishing it does that, but costs
// a synced write per update even when idle: the empty WAL's point is "now", which moves
// on every update. Instead (FORMAT.md, "Commit points and their lease"):
//
//  * A ceiling X (`commit_ceiling_ms`) is persisted; no published point exceeds it. A
//    point that would pass X is written together with a new X = point + lease.
//  * A point of a scope (the WAL, or one topic) with no live entries may move up to X
//    without a write: it is leased. After a crash, Open starts every such scope at X.
//    That is valid, since none of its messages is live and every receive time from then
//    on is above X, and it is at or above anything published before.
//  * A scope with live entries cannot start at X (its oldest entry may be older than X),
//    so its points are written before they are published (starting every scope at X
//    would claim messages delivered that are still in the log). The append that
//    gives a leased scope live entries persists the leased point (`leased_point_ms*`) in
//    its own batch. A lease is refused while a group commit is in flight: that group's
//    batch was built before the lease and does not carry it.
//  * A clean close writes every saved point and removes X: a clean restart starts
//    exactly where it stopped, with receive times that follow the clock.
//  * A topic's first point is written, never leased (the append that gives a topic
//    without a point live entries writes it: its receive time - 1, above whatever the
//    topic published before it was forgotten), so after a crash only topics with a
//    durable point start at X: a forgotten topic (ForgetIdleTopics) stays forgotten.
//  * The discard report: a lease is refused when the global point would fold settled
//    messages into the report's cumulative counts, so folds (and the report point they
//    move) are always in a written batch. A leased global point moves the report point
//    without a write (ReportSplit::PointAt): nothing at or below it waits to be folded.
// Idle, that is one write per lease period. Under load the WAL has live entries, so its
// global point is written whenever it moves (with the settles' cadence), as before.
#include "wal/keys.h"
#include "wal/log_cursor.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

CommitPoints RocksWal::SavedCommitPoints() const {
  MutexLock l(&mu_);
  return lease_.saved();
}

absl::Status RocksWal::SaveCommitPoints(const CommitPoints& requested) {
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  const CommitPoints points = KeepTracked(requested);  // not the topics forgotten meanwhile
  CommitPoints next;
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
    next = MaxOf(lease_.saved(), points);
    // Raise the floor before the points can be seen, so no later receive time is <= them.
    tail_.RaiseFloor(HighestPoint(next) + 1);
    if (LeaseCovers(next)) {
      report_.set_point_ms(report_.PointAt(next.global_ms));
      lease_.Lease(std::move(next));
      return absl::OkStatus();
    }
  }
  return WriteCommitPoints(next, /*closing=*/false);
}

bool RocksWal::LeaseCovers(const CommitPoints& next) const {
  if (tail_.writing_receive_ms()) return false;
  if (report_.FoldsAt(next.global_ms)) return false;
  return lease_.Covers(next, ledger_.topics());
}

absl::Status RocksWal::WriteCommitPoints(const CommitPoints& points, bool closing) {
  rocksdb::WriteBatch wb;
  wb.Put(db_->meta, keys::kCommitPoint, keys::U64(static_cast<uint64_t>(points.global_ms)));
  for (const auto& [topic, ms] : points.topics_ms) {
    wb.Put(db_->meta, keys::TopicCommitPoint(topic), keys::U64(static_cast<uint64_t>(ms)));
  }
  int64_t ceiling;
  {
    MutexLock l(&mu_);
    ceiling = lease_.ceiling_ms();
  }
  const int64_t highest = HighestPoint(points);
  if (closing) {
    wb.Delete(db_->meta, keys::kCommitCeiling);
    ceiling = 0;
  } else if (highest > ceiling) {
    ceiling = highest + options_.commit_lease_ms;
    wb.Put(db_->meta, keys::kCommitCeiling, keys::U64(static_cast<uint64_t>(ceiling)));
  }
  ReportSplit::Fold fold;
  {
    MutexLock l(&mu_);
    report_.PlanFold(points.global_ms, db_->meta, &wb, &fold);
  }
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "commit point write");
    return FromRocks(s, "save commit points");
  }
  MutexLock l(&mu_);
  lease_.Written(points, ceiling);
  report_.Apply(std::move(fold));
  return absl::OkStatus();
}

void RocksWal::CloseCommitPoints() {
  if (options_.read_only) return;
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return;
  CommitPoints saved;
  {
    MutexLock l(&mu_);
    // No ceiling: nothing was leased. After a write error the state is unknown: the
    // ceiling stays, and the next Open treats this close as a crash.
    if (lease_.ceiling_ms() == 0 || !write_error_.ok()) return;
    saved = lease_.saved();
  }
  WriteCommitPoints(saved, /*closing=*/true).IgnoreError();
}

absl::StatusOr<int64_t> RocksWal::ReceiveTimeBound(uint64_t from_seq) {
  // mu_ is held across the seek so that no group commits in between: the answer then
  // covers the log, the group being written, and every future group.
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  MutexLock l(&mu_);
  // A failed seek is returned, not read as "nothing live": the bound would then be the
  // floor, above the entries it could not read, and the commit point would pass them.
  // The caller keeps its last point and asks again (CommitTracker, the drain's pass).
  const uint64_t from = std::max(from_seq, ledger_.head());
  LogCursor c(*db_, {from, tail_.committed_next()});
  c.Seek(from);
  RETURN_IF_ERROR(c.status("WAL " + options_.dir + ": find the first live entry at or after " +
                           std::to_string(from)));
  if (c.Valid()) {
    // Verified: a corrupt record's time may be anything, and a bound from it would
    // publish a commit point (and raise the receive-time floor) into the future.
    absl::StatusOr<int64_t> t = c.VerifiedReceiveTime();
    if (t.ok()) return *t;
    // An unreadable record cannot vouch for its time, but it was not settled when the
    // last commit point was saved, so it was received after that point.
    return lease_.saved().global_ms + 1;
  }
  if (tail_.writing_receive_ms()) return *tail_.writing_receive_ms();
  tail_.RaiseFloor(tail_.Now(options_.clock->NowMillis()) + 1);
  return tail_.receive_floor_ms();
}

}  // namespace kspool::wal
