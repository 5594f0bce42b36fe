// DrainLoop: moves WAL entries to Kafka and settles them when Kafka has answered.
//
// It reads the WAL into a bounded window (messages and bytes: memory does not grow with
// the backlog) and produces each entry. A successful delivery report removes the entry
// from the WAL (batched Settle() calls). A transient error never discards: the entry
// stays in the window and the WAL and is produced again after an exponential backoff.
// A permanent error (as the producer classifies it, producer.h), an unknown topic or
// partition confirmed by `unknown_topic_checks` fresh metadata answers, an entry older
// than `max_message_age_ms`, or an undecodable entry is discarded: moved to the dead
// letters with its reason (discard_reasons.h), in the same WAL batch that counts it.
// The age limit holds whatever the state of the entry's partition: an entry waiting for
// a leader, in the window or unread in the WAL, is discarded within about a tenth of
// the limit (at most 1 s) after it passes it (drain_expire.cc).
//
// Isolation (ARCHITECTURE.md invariant 7; wal/FORMAT.md "Reading"): the window is shared
// fairly between the topics that have entries to send; a topic's entries beyond its
// share stay unread in the WAL and the reader goes on to other topics' entries behind
// them, coming back to the skipped ones from a per-topic read position. Within a topic,
// entries bound for one partition form a lane produced in sequence order; a partition
// without a leader (PartitionCache) holds back only its own lane, and messages without
// a key go to partitions that have a leader.
//
// Time: intervals, deadlines and backoffs use the monotonic clock; the wall clock is
// read only for message ages (ARCHITECTURE.md invariant 8).
//
// After a WAL write error the loop reopens the WAL periodically and reads it again from
// where the failed writes began (ReadPosition). Its state has owners of its own: the
// window (DrainWindow), the reader's position (ReadPosition), the finished entries and
// their settles (Settler), the producer (ProducerHolder) and what reconciliation holds
// (InDoubtEntries), and each topic's lanes, unread range, routing, sticky partition and
// what the producer refuses of it (TopicState, topic_state.h: one type per concern).
// A producer that hit a fatal error is replaced, with an exponential backoff.
// Stop() gives in-flight messages a grace period (cut short once the producer says no
// broker is up) and leaves the rest in the WAL.
// Thread safety: Start/Stop/RunOnce from one owner thread; Notify(), the counters and
// Stuck() from any.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/drain/commit_tracker.h"
#include "agent/drain/drain_metrics.h"
#include "agent/drain/drain_window.h"
#include "agent/drain/in_doubt_entries.h"
#include "agent/drain/outcome_listener.h"
#include "agent/drain/partition_cache.h"
#include "agent/drain/producer.h"
#include "agent/drain/producer_holder.h"
#include "agent/drain/read_position.h"
#include "agent/drain/reconciler.h"
#include "agent/drain/settler.h"
#include "agent/drain/slot_pool.h"
#include "agent/drain/stuck_topic.h"
#include "agent/drain/topic_state.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "wal/drain_log.h"

namespace kspool::agent {

struct DrainOptions {
  uint64_t max_inflight_messages = 100000;
  uint64_t max_inflight_bytes = 32ull << 20;
  uint64_t retry_backoff_ms = 100;
  uint64_t retry_backoff_max_ms = 5000;
  uint64_t commit_point_interval_ms = 100;
  uint64_t shutdown_grace_ms = 5000;
  uint64_t max_message_age_ms = 0;  // 0: never expire
  uint64_t unknown_topic_checks = 3;
  uint64_t wal_reopen_interval_ms = 1000;
  uint64_t settle_delay_ms = 50;    // how long an out-of-order finished entry waits
  uint64_t settle_interval_ms = 5;  // least time between two Settle() calls
  // A topic with entries to send and no delivery for this long is reported stuck.
  uint64_t stuck_after_ms = 10000;
  // Fatal producer errors: the first replacement waits this long, each one in a row
  // twice as long, up to the max.
  uint64_t producer_backoff_ms = 500;
  uint64_t producer_backoff_max_ms = 60000;
  // A producer that has produced to more topic names than this is replaced at a quiet
  // moment (nothing in flight, no report due): the client keeps every topic it was given
  // for its life, with its memory and its share of every metadata round, whatever the
  // agent forgot. 0: never. At most one such replacement per producer_recycle_min_ms.
  uint64_t producer_max_topics = 0;
  uint64_t producer_recycle_min_ms = 5000;
  // Least time between two take-backs of messages queued for leaderless partitions.
  uint64_t purge_interval_ms = 2000;
  size_t scan_max_keys = 65536;  // WAL keys one read pass may look at
  // Seeds the retry backoff's jitter; 0: a random seed. Tests fix it to replay a run.
  uint64_t random_seed = 0;
  Clock* clock = SystemClock::Default();
  // Told of each outcome once it is settled (outcome_listener.h); optional.
  OutcomeListener* outcomes = nullptr;
  DrainMetrics* metrics = nullptr;       // optional
  PartitionCache* partitions = nullptr;  // required
  // Reconciliation at start (reconciler.h; drain_reconcile.cc): entries found in the WAL
  // at Start() are held back until the reconciler has read their partitions in Kafka;
  // those found there are settled as delivered. Optional: without it, nothing is held.
  Reconciler* reconciler = nullptr;
  // Every hold ends this long after it began, whatever the reconciler says: the
  // entries not found by then are produced (a duplicate possible, a loss never).
  uint64_t reconcile_max_hold_ms = 60000;
};

// A topic whose in-doubt entries wait for their reconciliation (/status).
struct ReconcilingTopic {
  std::string topic;
  double seconds = 0;                 // since the hold began
  std::vector<int32_t> released;      // partitions read (or given up on) so far
};

class DrainLoop {
 public:
  DrainLoop(wal::DrainLog* wal, CommitTracker* tracker, ProducerFactory factory,
            DrainOptions options);
  ~DrainLoop();

  // Creates the producer and, with `background`, the loop's thread. Without it the
  // owner drives the loop with RunOnce() (deterministic tests).
  [[nodiscard]] absl::Status Start(bool background = true);
  // One pass of the loop: reopen the WAL if due, read, produce, take reports (waiting
  // up to poll_ms for them), settle, update the commit point.
  void RunOnce(int poll_ms = 0);
  // Wakes the loop: new entries were appended.
  void Notify();
  void Stop();

  uint64_t inflight() const { return inflight_.load(); }
  uint64_t redelivered() const { return redelivered_.load(); }
  uint64_t discarded() const { return discarded_.load(); }
  uint64_t producers_replaced() const { return producer_.replaced(); }
  // Producers replaced at a quiet moment for the topic names they held (any thread).
  uint64_t producers_recycled() const { return producer_.recycled(); }
  // Monotonic clock time of the last successful delivery report (0: none yet).
  int64_t last_delivery_mono_ms() const { return last_delivery_ms_.load(); }
  int brokers_up() const { return brokers_up_.load(); }
  std::vector<StuckTopic> Stuck() const;
  // Topics still reconciling after a restart, and the entries found in Kafka so far.
  std::vector<ReconcilingTopic> Reconciling() const;
  uint64_t reconciled_found() const { return reconcile_found_.load(); }
  // Entries below this were in the WAL at Start() (in doubt); 0 without a reconciler.
  uint64_t in_doubt_below() const { return in_doubt_.start(); }
  // Recounts the window's bookkeeping (drain_invariants.cc) and says what disagrees. Run
  // after every pass in builds with KSPOOL_DCHECKS (base/check.h), and by the drain
  // simulator after every step. Owner thread only.
  [[nodiscard]] absl::Status CheckInvariants() const;
  // The window and per-topic read state in a few lines, for a failing test's report.
  std::string DebugString() const;

 private:
  void Run();
  bool Refill(int64_t now);
  bool CatchUp(const std::string& topic, TopicState& ts, const Shares& shares);
  bool ReadNew(const Shares& shares);
  bool Admit(std::vector<wal::Entry>& entries);
  Room WindowRoom() const;
  void ScanFailed(const absl::Status& s);
  // True when `c` must stay unread because its lane's partition has no leader and the
  // lane holds its share already; `taken` counts what this pass took per lane.
  bool HoldsBack(TopicState& ts, const wal::ScanCandidate& c, const TopicLayout& layout,
                 const Shares& shares, std::map<int32_t, uint64_t>* taken);
  // May lane `lane_id` of `ts` go to the producer now? kGo, or the first reason it may
  // not (LaneWait), one return per reason. Lane-level only: an entry may still wait on
  // its own (an unkeyed or keyed in-doubt entry, one that travels alone, a routing bound
  // the WAL refused; ProduceLane).
  LaneWait WhyLaneWaits(const TopicState& ts, int32_t lane_id, const TopicLayout& layout,
                        int64_t now) const;
  // True when partition lane `lane`'s entries cannot go out for now for a reason outside
  // the drain's pace (IsHeld): such a lane keeps at most Shares::parked_lane entries; the
  // rest wait unread.
  // The reader asks it per entry offered: the clock is read only when a lag may hold
  // (with none, the first reasons that need no time decide, and the rest hold nothing).
  bool Held(const TopicState& ts, int32_t lane, const TopicLayout& layout) const {
    if (lane < 0) return false;
    const int64_t now = ts.producer.lags.empty() ? 0 : options_.clock->MonotonicMillis();
    return IsHeld(WhyLaneWaits(ts, lane, layout, now));
  }
  void Evict(const Shares& shares);
  // Discards entries older than max_message_age_ms that are not in the client: those in
  // lanes and those left unread (drain_expire.cc). At most once per expire interval.
  void ExpireOld(int64_t now);
  void ExpireLane(TopicState& ts, Lane& lane, int32_t lane_id, const TopicLayout& layout,
                  int64_t cutoff);
  void ExpireUnread(const std::string& topic, TopicState& ts, int64_t cutoff, int64_t now);
  // True while `seq` may be in Kafka already (in doubt: in the WAL at Start(), or a
  // suspect) and the reconciliation that would find it there has not answered for it:
  // such an entry is neither produced nor expired meanwhile, or a message Kafka holds
  // would be reported discarded, dead-lettered, and duplicated by a replay. `lane_id`
  // is the entry's lane (kLaneUnordered/kLaneUnrouted wait for the whole topic).
  bool AwaitsReconciliation(const TopicState& ts, uint64_t seq, const Slot& slot,
                            int32_t lane_id, const TopicLayout& layout) const;
  // The same for a slot whose report just came back (its layout looked up).
  bool AwaitsReconciliation(const TopicState& ts, uint64_t seq, const Slot& slot) const;
  // Marks the partitions for which the client holds entries past the age limit
  // (ProducerView::holds_expired).
  void ExpireInClient(int64_t cutoff);
  // How far ExpireUnread() may take the window past its limits: expired entries are
  // discarded at once and leave at the next settle, so a full window still lets a stuck
  // topic's old entries go, and memory stays within the limits plus this.
  static constexpr uint64_t kExpireOvershootMessages = 256;
  static constexpr uint64_t kExpireOvershootBytes = 4 << 20;
  void ProduceDue(int64_t now);
  void ProduceLane(TopicState& ts, Lane& lane, int32_t lane_id, const TopicLayout& layout,
                   int64_t now, bool* queue_full);
  void HandleReports(const std::vector<DeliveryReport>& reports, int64_t now);
  void Retry(uint64_t seq, Slot& slot, const std::string& error, int64_t now);
  void Enqueue(uint64_t seq, Slot& slot, const TopicLayout& layout);
  // The same, with the topic's state at hand (`ts` is topics_[slot's topic]).
  void Enqueue(uint64_t seq, Slot& slot, const TopicLayout& layout, TopicState& ts);
  void Unqueue(uint64_t seq, const Slot& slot);
  // Routes the topic's keyed entries again after its partition count changed (a topic
  // deleted and recreated, partitions added). False while entries routed by the old
  // count are with the producer: the topic waits for their reports, so that no newer
  // entry of a key overtakes them. The topic's entries left unread for leaderless
  // partitions are looked at again by its next catch-up, under the new lanes.
  bool Reroute(const std::string& topic, TopicState& ts, const TopicLayout& layout);
  // Back to its lane, not produced: the client gave it back, or is gone.
  void Requeue(uint64_t seq, Slot& slot);
  bool WindowFull() const {
    return window_.Full(options_.max_inflight_messages, options_.max_inflight_bytes);
  }
  void Discard(uint64_t seq, Slot& slot, const std::string& reason, const std::string& error);
  bool Expired(const Slot& slot) const;
  // True once `unknown_topic_checks` fresh metadata answers say the slot's topic (or
  // explicit partition) does not exist.
  bool TargetMissing(const Slot& slot, std::string* why);
  void Finish(uint64_t seq, Slot& slot, wal::Outcome outcome, int64_t now);
  // The rest of Finish, for a slot whose outcome is stored already.
  void MarkFinished(uint64_t seq, Slot& slot, int64_t now);
  // Takes an unproduced entry out of the window (it stays in the WAL, unread).
  void Forget(uint64_t seq, Slot& slot);
  // Settles what is due; everything finished when `all`.
  void SettleFinished(int64_t now, bool all);
  using Window = DrainWindow;
  void UpdateCommitPoint();
  void UpdateStuck(int64_t now);
  void MaybeReopenWal(int64_t now);
  void ReplaceProducerIfFatal(int64_t now);
  // Replaces a producer past producer_max_topics once nothing is in flight.
  void RecycleProducerIfQuiet(int64_t now);
  void Degraded(const char* event) {
    if (options_.metrics) options_.metrics->Degraded(event);
  }
  void DrainForShutdown();
  // Reconciliation (drain_reconcile.cc). Admitting an in-doubt entry: asks for its
  // topic's reconciliation the first time; true when a copy found in Kafka settled it.
  bool AdmitInDoubt(uint64_t seq, Slot& slot, TopicState& ts, int64_t now);
  // Applies the reconciler's results, and ends holds older than the max hold.
  void PollReconciler(int64_t now);
  void SettleFound(uint64_t seq, Slot& slot, const FoundCopy& copy, int64_t now);
  void HoldUnkeyed(Lane& lane, uint64_t seq, int64_t now);
  // False once `topic`'s entry `seq`, not in the window, can no longer be read: below
  // the reader's cursor and below the topic's unread position, it was read and has left
  // the window, settled. A copy found for such an entry has nothing left to settle.
  bool MayBeUnread(std::string_view topic, uint64_t seq) const;
  // Drops the kept copies (InDoubtEntries) whose entries can no longer be read
  // (MayBeUnread), at most every kRecheckMs: kept, they would hold their partitions'
  // watermarks for the life of the process (HoldWatermarks).
  void PruneFound(int64_t now);
  // An unkeyed (or unrouted) in-doubt entry that must wait for its topic's reconciliation.
  bool InDoubtHeld(const TopicState& ts, uint64_t seq) const {
    return ts.gate.HoldsTopic() && InDoubt(seq);
  }
  // In the WAL at Start(), or a suspect: either may be in Kafka already.
  bool InDoubt(uint64_t seq) const { return in_doubt_.InDoubt(seq); }
  // An attempt of `slot` may be in Kafka unreported (in flight when the producer was
  // replaced, or reported possibly persisted): it becomes a suspect, and its topic is
  // held for a new round of reconciliation before it goes again. AskRoundsDue asks it,
  // once per topic for the suspects of a poll (RunOnce) or of a replacement.
  void Suspect(uint64_t seq, const Slot& slot, const char* why);
  void AskRoundsDue();
  // The routing bounds of `topic` (drain_reconcile.cc), read once. When the count its
  // keyed entries are routed by changes (Reroute), and before a keyed entry is produced
  // with a count the saved bounds do not cover, SaveRouting saves the bound that says
  // so. False when the WAL refused it: a keyed entry's lane waits for the next pass.
  void LoadRouting(const std::string& topic, TopicState& ts);
  bool SaveRouting(const std::string& topic, TopicState& ts, int32_t count);
  // Before `slot` goes out of lane `lane_id`: a keyed entry needs a bound saved for the
  // count it is routed by (SaveRouting); false while the WAL refuses it.
  bool RoutingSaved(TopicState& ts, const Slot& slot, int32_t lane_id, const TopicLayout& layout);
  // The first time a reader is offered an in-doubt entry of `topic`: asks for the topic's
  // reconciliation and holds its in-doubt entries (ts.gate).
  void AskReconcile(std::string_view topic, TopicState& ts, uint64_t seq, int64_t receive_time_ms);
  // Marks the deliveries of `batch` to partitions not read back yet, or holding a copy
  // found and not settled yet, as leaving their watermark.
  void HoldWatermarks(std::vector<wal::Outcome>* batch) const;
  // A keyed in-doubt entry at the head of its lane, whose copy may be in a partition
  // not released yet (drain_reconcile.cc).
  bool InDoubtKeyHeld(const TopicState& ts, uint64_t seq, const Slot& slot,
                      const TopicLayout& layout) const;

  wal::DrainLog* const wal_;
  CommitTracker* const tracker_;
  const DrainOptions options_;
  ProducerHolder producer_;  // none while a replacement waits for its backoff

  // Owned by the loop thread.
  DrainWindow window_;  // the slots and the counters over them
  std::map<std::string, TopicState, std::less<>> topics_;
  // The reader's cursor, its recheck bound and the WAL reopens it has seen; a topic's
  // entries below the cursor that are not in the window are unread only from that
  // topic's `unread.from` on (read_position.h).
  ReadPosition reader_;
  int64_t next_full_scan_ms_ = 0;
  std::string catch_up_after_;  // the topic that caught up last (Refill's turns)
  bool read_any_ = false;       // the last pass read entries
  std::vector<DeliveryReport> polled_;  // RunOnce's reports, kept for their capacity
  // Finished (delivered or discarded) entries wait in the window until they can leave
  // the WAL in few batches (settler.h).
  Settler settler_;
  int64_t next_commit_update_ms_ = 0;
  int64_t next_reopen_ms_ = 0;
  int64_t last_settle_error_log_ms_ = 0;
  int64_t next_purge_ms_ = 0;
  int64_t next_expire_ms_ = 0;
  std::set<TopicPartition> to_purge_;  // leaderless partitions the client holds entries for
  std::mt19937 rng_;              // retry jitter (DrainOptions::random_seed)
  // Reconciliation's bookkeeping: entries in doubt since the start, suspects, topics
  // asked, rounds due, copies found for entries not read yet.
  InDoubtEntries in_doubt_;
  bool gates_holding_ = false;  // some topic's gate may hold (false: none does)
  // Topics this process saved or confirmed a routing bound for: a new bound starts at the
  // entries it has not read yet. Kept when the topic's state is dropped while idle (its
  // settled entries then keep the bounds precise); one name per topic ever routed.
  std::set<std::string, std::less<>> routed_topics_;
  int64_t last_routing_error_log_ms_ = 0;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> inflight_{0};
  std::atomic<uint64_t> redelivered_{0};
  std::atomic<uint64_t> discarded_{0};
  std::atomic<int64_t> last_delivery_ms_{0};
  std::atomic<int> brokers_up_{0};  // 0 until the producer's first statistics
  Mutex wake_mu_;
  CondVar wake_cv_;
  uint64_t wake_count_ ABSL_GUARDED_BY(wake_mu_) = 0;
  mutable Mutex stuck_mu_;
  std::vector<StuckTopic> stuck_ ABSL_GUARDED_BY(stuck_mu_);
  std::vector<ReconcilingTopic> reconciling_ ABSL_GUARDED_BY(stuck_mu_);
  std::atomic<uint64_t> reconcile_found_{0};
};

}  // namespace kspool::agent
