// RocksWal: the Wal on RocksDB. Internal to wal/; users see wal.h and the interfaces it
// aggregates.
//
// Components with their own header and state, which RocksWal composes:
//   GroupCommitter   group_committer.h    the append queue and the committer thread; it
//                                         calls CommitGroup() back (state under mu_)
//   LogTail          log_tail.h           sequence numbers, receive times (under mu_)
//   Ledger           ledger.h             counters per topic, live bytes, head,
//                                         admission, topic tracking (under mu_)
//   DeliveryIndex    delivery_index.h     the index of settled outcomes (leaf lock)
//   DeadLetterStore  dead_letter_store.h  the dead letters and their limits (leaf lock)
//   WatermarkStore   watermark_store.h    the settled watermarks (under settle_mu_)
//   TallyStore       tally_store.h        the delivery tallies (under settle_mu_)
//   ReportSplit      report_split.h       the discard report's split (under mu_)
//   KnownGaps        known_gaps.h         the log's gaps learnt by scans (under mu_)
//   CommitLease      commit_lease.h       the commit points and their lease (under mu_)
//   OpenDb           open_db.h            the open database (under db_mu_)
//   WalReserve       open_reserve.h       the reserve file (its own leaf lock)
//   LogCursor        log_cursor.h         the one reader of the log's live messages
//   SettleInLog      settle_in_log.h      a settle's writes to the log (settle_mu_)
// "Under mu_": the component has no lock; RocksWal holds it ABSL_GUARDED_BY(mu_), so that
// a group's admission, numbering and accounting, or a Settle's take-over, are one
// critical section each and an append takes no second lock. GroupCommitter's methods
// take mu_ as an argument (annotated as required) because its thread waits on it.
// The rest is RocksWal's own, file by file: opening and reopening (rocks_wal_open.cc,
// read-only: rocks_wal_read_only.cc), writing a group (rocks_wal_append.cc), reading the
// log (rocks_wal_read.cc), Settle (rocks_wal_settle.cc) with the live-entry tracking
// (rocks_wal_live.cc) and the attribution of unreadable records
// (rocks_wal_attribute.cc), commit points and their lease (rocks_wal_commit_points.cc),
// forgetting idle topics (rocks_wal_topics.cc), dead-letter trim, replay and purge
// (rocks_wal_dead.cc, rocks_wal_dead_admin.cc), stats and the report
// (rocks_wal_state.cc): the writes and the locking that tie the components together,
// about 1,500 lines of code. Each component's batch is applied to memory only once
// written.
//
// Lock order: settle_mu_ -> db_mu_ -> mu_ -> the components' leaf locks. db_mu_ is held
// shared by everything that touches RocksDB and exclusively by Reopen(), which swaps
// the database underneath.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "rocksdb/db.h"
#include "wal/commit_lease.h"
#include "wal/dead_letter_store.h"
#include "wal/delivery_index.h"
#include "wal/group_committer.h"
#include "wal/info_log.h"
#include "wal/known_gaps.h"
#include "wal/ledger.h"
#include "wal/log_tail.h"
#include "wal/open_db.h"
#include "wal/open_reserve.h"
#include "wal/report_split.h"
#include "wal/seq_runs.h"
#include "wal/tally_store.h"
#include "wal/wal.h"
#include "wal/watermark_store.h"

namespace kspool::wal {

// FAILED_PRECONDITION "<dir> is not a kspool WAL: <why>" (rocks_wal_read_only.cc).
absl::Status NotAKspoolWal(const std::string& dir, const std::string& why);

class RocksWal final : public Wal, private GroupCommitter::Sink {
 public:
  static absl::StatusOr<std::unique_ptr<Wal>> Open(Options options);
  // Commits what is queued, then stops the committer thread.
  ~RocksWal() override;

  void AppendAsync(AppendBatch batch, AppendCallback done) override;
  absl::StatusOr<bool> AppendKept(uint64_t first_seq) const override;
  absl::Status Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                    std::vector<Entry>* out) override;
  absl::Status ScanChoosing(const ScanRange& range,
                            const std::function<ScanChoice(const ScanCandidate&)>& choose,
                            std::vector<Entry>* out, uint64_t* next) override;
  absl::Status Settle(const std::vector<Outcome>& outcomes) override;
  absl::StatusOr<int64_t> ReceiveTimeBound(uint64_t from_seq) override;
  absl::Status SaveCommitPoints(const CommitPoints& points) override;
  CommitPoints SavedCommitPoints() const override;
  absl::StatusOr<DeadLetterTrim> TrimDeadLetters() override;
  std::vector<std::string> TrackedTopics() const override;
  absl::StatusOr<std::vector<std::string>> ForgetIdleTopics() override;
  absl::Status CompactDeadRange() override;
  bool RestoreReserve() override;
  Stats GetStats() const override;
  Report GetReport() const override;
  std::string agent_id() const override;
  absl::Status health() const override;
  absl::Status Reopen() override;
  uint64_t reopens() const override;
  uint64_t rescan_from() const override;
  absl::StatusOr<std::vector<RoutingBound>> RoutingBounds(const std::string& topic) override;
  absl::StatusOr<std::vector<RoutingBound>> SaveRoutingBound(const std::string& topic,
                                                             RoutingBound bound) override;
  absl::Status ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                               std::vector<DeadLetter>* out) override;
  absl::Status CountLive(std::map<std::string, Counts>* out) override;
  absl::StatusOr<BitmapCheck> CheckBitmaps() override;
  absl::StatusOr<std::optional<Entry>> Newest() override;
  absl::StatusOr<std::vector<ReplayedEntry>> ReplayDeadLetters(
      const std::vector<uint64_t>& seqs) override;
  absl::Status PurgeDeadLetters(const std::vector<uint64_t>& seqs) override;
  absl::Status LookupDeliveries(const std::vector<uint64_t>& seqs,
                                std::vector<Outcome>* out) override;
  absl::Status ScanDeliveries(uint64_t from_seq, size_t max_entries, std::vector<Outcome>* out,
                              uint64_t* next) override;
  absl::StatusOr<DeliveryTally> DeliveryTallyOf(const std::string& topic,
                                                int32_t partition) override;
  absl::StatusOr<DeliveryTrim> TrimDeliveries() override;
  absl::StatusOr<std::vector<Watermark>> Watermarks() override;
  absl::StatusOr<std::vector<Watermark>> WatermarksOf(std::string_view topic) override;

  // Options::read_only (rocks_wal_read_only.cc): a view of `wal` whose writing methods fail
  // with FAILED_PRECONDITION.
  static std::unique_ptr<Wal> ReadOnlyView(std::unique_ptr<RocksWal> wal);

 private:
  explicit RocksWal(Options options)
      : options_(std::move(options)),
        info_log_(NewInfoLog(options_.info_log)),
        committer_({options_.max_group_requests, options_.max_group_bytes,
                    options_.max_queue_bytes, options_.group_commit_delay_us}),
        ledger_({options_.max_bytes, options_.max_topic_bytes, options_.topic_idle_forget_ms,
                 options_.max_tracked_topics}),
        report_(options_.max_report_buckets),
        delivery_index_(options_.clock, options_.delivery_retention_ms,
                        options_.delivery_retention_bytes),
        dead_letters_(options_.clock, options_.max_dead_letter_bytes,
                      options_.max_dead_letter_age_ms),
        reserve_(options_.reserve_bytes > 0 && !options_.read_only
                     ? std::make_unique<WalReserve>(options_.dir, options_.reserve_bytes,
                                                    options_.reserve_fs)
                     : nullptr) {}
  absl::StatusOr<std::unique_ptr<OpenDb>> OpenDatabase();
  // Options::read_only: refuses a directory that is not a kspool WAL; writes nothing.
  absl::StatusOr<std::unique_ptr<OpenDb>> OpenDatabaseReadOnly() const;
  // Until no group commit is queued or being written; returns with mu_ held, so that
  // the caller's write takes the next sequence numbers in order.
  void LockWithNoGroupCommit() ABSL_EXCLUSIVE_LOCK_FUNCTION(mu_);
  // Loads the persisted state into memory; on a reopen, in-memory high-water marks win.
  absl::Status LoadState(bool reopen) ABSL_EXCLUSIVE_LOCKS_REQUIRED(settle_mu_, db_mu_);
  // GroupCommitter::Sink, on the committer thread with mu_ held (rocks_wal_append.cc).
  bool Accepting() const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return write_error_.ok();
  }
  // Admits a group from the queue's head (the ledger), numbers it, writes it with the
  // meta updates in one synced batch (dropping mu_ during the write) and takes the
  // result over into the tail, the ledger and the lease.
  size_t CommitGroup() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where live entries may be: [ledger_.head(), tail_.committed_next()), read together.
  struct LiveRange {
    uint64_t head, next;
  };
  LiveRange live_range() const ABSL_LOCKS_EXCLUDED(mu_);
  // First live seq in [from, limit), or nullopt when the log holds none there. A read
  // that fails is an error naming the WAL directory, never "none": every caller would
  // otherwise move past entries it could not see (the head, the commit point).
  absl::StatusOr<std::optional<uint64_t>> FirstLiveAtOrAfter(uint64_t from, uint64_t limit) const
      ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // The outcomes of Settle() that are for live entries, at most one per sequence number
  // (rocks_wal_live.cc): `outcomes` itself in the common case, else a filtered copy in
  // `*kept`. `*seqs` gets their sequence numbers, sorted.
  absl::StatusOr<const std::vector<Outcome>*> LiveOutcomes(const std::vector<Outcome>& outcomes,
                                                           std::vector<uint64_t>* seqs,
                                                           std::vector<Outcome>* kept) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(settle_mu_) ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // After a Scan() that read every key in [from, end) and returned `out[first..]`:
  // extends the region whose gaps are known (rocks_wal_live.cc).
  void NoteScanned(uint64_t from, uint64_t end, const std::vector<Entry>& out, size_t first)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same, given the gaps (key ranges absent) in [from, end).
  void NoteGaps(uint64_t from, uint64_t end, const std::vector<std::pair<uint64_t, uint64_t>>& gaps)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One synced write batch, counted in Stats::fsyncs.
  rocksdb::Status SyncedWrite(rocksdb::WriteBatch* wb) ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // Commit points and their lease (rocks_wal_commit_points.cc).
  //
  // True if publishing `points` needs no write: every point that moves belongs to a
  // scope with no live entries and no group commit in flight, stays at or below the
  // ceiling, is not a topic's first point, and the global point folds no settled
  // message into the report (ReportSplit::FoldsAt).
  bool LeaseCovers(const CommitPoints& points) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `points` (synced) with the report split folded at the global point, and the
  // ceiling: raised if a point passes it, or removed when `closing` (every published
  // point is then in the batch).
  absl::Status WriteCommitPoints(const CommitPoints& points, bool closing)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(settle_mu_) ABSL_SHARED_LOCKS_REQUIRED(db_mu_)
          ABSL_LOCKS_EXCLUDED(mu_);
  // On a clean close: persists every saved point and removes the ceiling.
  void CloseCommitPoints() ABSL_LOCKS_EXCLUDED(settle_mu_, db_mu_, mu_);
  absl::Status ClosedError() const;
  // Live entries in [from, limit) by topic, unreadable ones under "" (limit UINT64_MAX: to
  // the end).
  absl::Status CountLiveBetween(uint64_t from, uint64_t limit,
                                std::map<std::string, Counts>* out) const
      ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // `given`, or a copy in `fixed` in which each discard of an unreadable record is
  // charged to the topic whose ledger owns it (rocks_wal_attribute.cc); an error when the
  // live log cannot be counted (the settle fails: a guess never stands).
  absl::StatusOr<const std::vector<Outcome>*> AttributeUnreadable(const std::vector<Outcome>& given,
                                                                  std::vector<Outcome>* fixed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(settle_mu_) ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // Puts into `wb` the fold of forgotten topics' counters (Ledger::PlanFold): their keys
  // deleted, kForgottenTopics' new totals written.
  void PutFold(const std::vector<std::string>& folded, const TopicStats& forgotten,
               rocksdb::WriteBatch* wb) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_)
      ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  // `points` without the topics forgotten meanwhile (Ledger::KeepTracked).
  CommitPoints KeepTracked(const CommitPoints& points) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes a failed write sticky (LevelDB's RecordBackgroundError).
  void RecordWriteError(const rocksdb::Status& s, std::string_view what) ABSL_LOCKS_EXCLUDED(mu_);
  void RecordWriteErrorLocked(const rocksdb::Status& s, std::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  // One logger for every open and reopen (info_log.h).
  const std::shared_ptr<rocksdb::Logger> info_log_;

  mutable SharedMutex db_mu_;
  std::unique_ptr<OpenDb> db_ ABSL_GUARDED_BY(db_mu_);  // null while reopening failed

  mutable Mutex mu_;
  // Set by Open(); a Reopen() checks the directory still holds it and never changes it.
  std::string agent_id_ ABSL_GUARDED_BY(mu_);
  absl::Status write_error_ ABSL_GUARDED_BY(mu_);  // sticky until Reopen()
  bool out_of_space_ ABSL_GUARDED_BY(mu_) = false;  // write_error_ is an ENOSPC
  uint64_t reopens_ ABSL_GUARDED_BY(mu_) = 0;
  // Where the writes in doubt begin: tail_.committed_next() at the first write error
  // since the last reopen (a failed group starts there, a failed dead-letter replay
  // too, and nothing is written after it); rescan_from_ takes it at the reopen.
  std::optional<uint64_t> doubt_from_ ABSL_GUARDED_BY(mu_);
  uint64_t rescan_from_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> fsyncs_{0};
  // The append queue and the committer thread (group_committer.h), started by Open()
  // unless read-only. Its methods take mu_, which guards its state.
  GroupCommitter committer_;
  // Appends whose failed write RocksDB may have kept, until a reopen says (appends_in_doubt.h).
  AppendsInDoubt in_doubt_ ABSL_GUARDED_BY(mu_);
  // Sequence numbers, receive times, append counters (log_tail.h).
  LogTail tail_ ABSL_GUARDED_BY(mu_);
  // Counters per topic, live bytes, head, admission, topic tracking (ledger.h); its
  // head and tail_'s committed_next() bound the live entries.
  Ledger ledger_ ABSL_GUARDED_BY(mu_);
  // The commit points and their lease (commit_lease.h).
  CommitLease lease_ ABSL_GUARDED_BY(mu_);
  // The gaps of the log below this incarnation's first group commit (known_gaps.h).
  KnownGaps known_gaps_ ABSL_GUARDED_BY(mu_);
  // The discard report's split (report_split.h); changed only under settle_mu_ too.
  ReportSplit report_ ABSL_GUARDED_BY(mu_);
  // The new accepted totals of the group CommitGroup is writing with mu_ released (null
  // when none is): its topics are not forgotten meanwhile, or the group's totals, taken
  // before, would come back over a forgetting that moved their counters
  // (ForgetIdleTopics).
  const std::map<std::string, Counts>* writing_topics_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The delivery index (delivery_index.h): its writers hold settle_mu_; Settle() takes
  // over its new totals under mu_, so that GetStats() sees them with the ledger's.
  DeliveryIndex delivery_index_;
  // The dead letters (dead_letter_store.h): their writers hold settle_mu_; their totals
  // are taken over under mu_ too, so that admission sees them with live_bytes_.
  DeadLetterStore dead_letters_;
  // The reserve file (open_reserve.h); null without one (Options::reserve_bytes 0, or
  // read-only). Released before an open that needs its room; appends are refused while
  // it is missing.
  const std::unique_ptr<WalReserve> reserve_;

  // Settle() is serialized: it owns the delete bookkeeping.
  mutable Mutex settle_mu_;
  SeqRuns deleted_above_head_ ABSL_GUARDED_BY(settle_mu_);
  // The settled watermarks' durable maxima (watermark_store.h): written by Settle() and
  // ForgetIdleTopics(), loaded by LoadState(), all under settle_mu_.
  WatermarkStore watermarks_ ABSL_GUARDED_BY(settle_mu_);
  TallyStore tallies_ ABSL_GUARDED_BY(settle_mu_);
  std::atomic<uint64_t> tallies_restarted_{0};  // Stats::tallies_restarted
};

}  // namespace kspool::wal
