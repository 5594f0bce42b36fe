// Ledger: what a WAL holds, topic by topic, and what it lets in. A component of RocksWal.
//
//  * The counters per topic (accepted, delivered, discarded, dropped from the dead
//    letters: TopicStats), the live bytes, and the head (the oldest live seq, or the
//    log's end when nothing is live). RocksWal persists each change in the batch that
//    makes it, and takes it over here (Note*) only once that batch is written.
//  * Admission: the WAL's capacity (Options::max_bytes, counting the dead letters) and
//    the per-topic bound (Options::max_topic_bytes: a topic that cannot drain fills at
//    most that much; only its own appends are refused), with the refusals counted by
//    cause and, for tracked topics, by topic. Both count what the log stores: live
//    messages and the settled ones still held in part-settled batch records
//    (TopicStats::stored()), so one stuck partition cannot fill the volume through the
//    records it shares with delivered messages.
//  * Topic tracking: the topics whose commit points are kept, with the receive time of
//    their last append. A topic with nothing live and no append for
//    Options::topic_idle_forget_ms is forgotten, and so are the longest idle beyond
//    Options::max_tracked_topics; its counters are added to those of kForgottenTopics
//    and leave (PlanFold), so a WAL keeps per-topic state for the topics it tracks,
//    not for every name it was ever sent. A topic that comes back counts from 0.
// Thread safety: none of its own; RocksWal holds it under its mu_ (so a group's
// admission and accounting are in the same critical section as its numbering).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "wal/append_batch.h"
#include "wal/stats.h"

namespace kspool::wal {

class Ledger {
 public:
  struct Limits {
    uint64_t max_bytes = 0;        // live entries plus dead letters; 0: unbounded
    uint64_t max_topic_bytes = 0;  // a topic's live entries; 0: unbounded
    int64_t topic_idle_forget_ms = 0;
    size_t max_tracked_topics = 0;
  };
  // Causes of refusal (Stats::refused).
  static constexpr char kWalFull[] = "wal_full";
  static constexpr char kTopicFull[] = "topic_full";
  static constexpr char kQueueFull[] = "append_queue_full";
  static constexpr char kNoReserve[] = "no_reserve";  // open_reserve.h

  explicit Ledger(Limits limits) : limits_(limits) {}

  const std::map<std::string, TopicStats>& topics() const { return topics_; }
  Counts accepted(const std::string& topic) const;
  // Stored in the log: live messages and held ones (TopicStats::stored()).
  uint64_t live_bytes() const { return live_bytes_; }
  uint64_t head() const { return head_; }

  // At Open/Reopen: the persisted counters and the head.
  void Load(std::map<std::string, TopicStats> topics, uint64_t head);
  // The head only moves up (Settle removed everything below `head`).
  void RaiseHead(uint64_t head) { head_ = std::max(head_, head); }

  // Admission of one append into the group being formed: the WAL's capacity, with
  // `dead_bytes` of dead letters and `group_bytes` already admitted, and the per-topic
  // bound. `group_topics` holds the bytes per topic already admitted into the group,
  // and gains the request's on success. RESOURCE_EXHAUSTED, counted, otherwise.
  absl::Status Admit(const AppendBatch& batch, uint64_t group_bytes, uint64_t dead_bytes,
                     std::map<std::string, uint64_t>* group_topics);
  // Counts a refusal decided elsewhere (kQueueFull: by the group committer; kNoReserve:
  // by the reserve).
  void CountRefused(const char* cause) { ++refused_[cause]; }

  // After a written append of `bytes`: the topics' new `accepted` totals.
  void NoteAccepted(const std::map<std::string, Counts>& accepted, uint64_t bytes);
  // After a written Settle of `bytes`: the touched topics' new delivered, discarded and
  // held totals (their other counters are not taken over), and the bytes the settle
  // left held in part-settled records and those it freed from them.
  void NoteSettled(const std::map<std::string, TopicStats>& totals, uint64_t bytes,
                   uint64_t held_added, uint64_t held_released);
  // After a written dead-letter trim: per topic and limit, the new dropped totals.
  void NoteDeadDropped(const std::map<std::string, std::map<std::string, Counts>>& dropped);

  // Topic tracking. `now_ms` is the clock, never behind the last receive time.
  //
  // Marks `topics` (of a group being written) as active at `receive_ms`.
  void Touch(const std::map<std::string, Counts>& topics, int64_t receive_ms);
  std::vector<std::string> TrackedTopics() const;
  size_t tracked_count() const { return tracked_.size(); }
  // At Open/Reopen: tracks the topics of the durable `points` (on a reopen, those memory
  // still tracks, and `points` loses the topics memory forgot) and those with live
  // entries, idle since their `last_append`, or `now_ms` when unknown.
  void TrackAtOpen(bool reopen, const std::map<std::string, int64_t>& last_append, int64_t now_ms,
                   CommitPoints* points);
  // `points` without the topics not tracked (forgotten meanwhile).
  CommitPoints KeepTracked(const CommitPoints& points) const;
  // The topics to forget at `now_ms`, longest idle first: those with nothing live idle
  // for topic_idle_forget_ms, then more while over max_tracked_topics.
  std::vector<std::string> IdleTopics(int64_t now_ms) const;
  // After their commit points were deleted.
  void Forget(const std::vector<std::string>& topics);
  // Of `topics` (being forgotten), those whose counters can leave: nothing stored, no
  // live message and no held bytes (a later settle finds its topic's counters). Sets
  // `*folded` to them and returns kForgottenTopics' totals with theirs added.
  TopicStats PlanFold(const std::vector<std::string>& topics,
                      std::vector<std::string>* folded) const;
  // After the fold's write: their counters leave, kForgottenTopics' become `totals`.
  void NoteFolded(const std::vector<std::string>& folded, TopicStats totals);

  const std::map<std::string, uint64_t>& refused() const { return refused_; }
  const std::map<std::string, uint64_t>& topic_full_refused() const { return topic_full_refused_; }
  uint64_t topics_forgotten() const { return topics_forgotten_; }

 private:
  const Limits limits_;
  std::map<std::string, TopicStats> topics_;
  uint64_t live_bytes_ = 0;
  uint64_t head_ = 1;
  std::map<std::string, uint64_t> refused_;
  std::map<std::string, uint64_t> topic_full_refused_;
  // Tracked topics -> receive time of their last append (or when tracking started).
  std::map<std::string, int64_t> tracked_;
  uint64_t topics_forgotten_ = 0;
};

}  // namespace kspool::wal
