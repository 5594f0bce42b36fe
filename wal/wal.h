// The durable log. Owns one RocksDB directory. Knows nothing of gRPC or Kafka.
//
// Contract:
//  * Append() returns OK only after its records are in the log and the write was
//    fsynced; a call is all-or-nothing. Appends are queued and written by one
//    committer thread: everything queued while an fsync runs shares the next write
//    batch and fsync (group commit). AppendAsync() is the same without blocking: its
//    callback runs once, with the outcome, on the committer thread (or at once, on the
//    caller's thread, when the append is refused before it is queued).
//  * Sequence numbers are unique, strictly increasing, and never reused, also across
//    reopen: the next number is persisted in the same batch as the entries.
//  * Receive times come from the Clock but never go backwards, also across reopen.
//  * After a failed write or sync, every later Append(), Settle() and
//    SaveCommitPoints() fails with UNAVAILABLE until Reopen() succeeds: the state after
//    a failed sync is unknown (RocksDB may or may not have kept the batch).
//  * Append() fails with RESOURCE_EXHAUSTED, writing nothing, when the live entries
//    plus the dead letters would exceed Options::max_bytes, when one of its topics' live
//    entries would exceed Options::max_topic_bytes, or (at once, before it is queued)
//    when the appends waiting for the committer would exceed Options::max_queue_bytes.
//  * Settle() removes entries and updates the persisted counters (and the dead-letter
//    store, for discards) in one atomic, synced write batch. It is idempotent: an
//    outcome whose sequence number is not live (below the head, settled already, or
//    never written) is ignored, neither counted nor kept as a dead letter, and so is a
//    second outcome for the same number in one call. Applying a batch again after a
//    failed sync, a Reopen() or a restart therefore changes nothing if RocksDB kept it
//    and applies it once if not: accepted = delivered + discarded + live always holds.
//  * Settle() also writes each entry's outcome into the delivery index, in the same
//    batch (no extra fsync), so that LookupDeliveries() and ScanDeliveries() can say
//    what became of a sequence number after the entry is gone; TrimDeliveries() bounds
//    the index by Options::delivery_retention_ms and delivery_retention_bytes.
//  * Commit points (SaveCommitPoints) never decrease, also across restarts and wall-clock
//    steps, and an idle WAL writes at most one synced batch per Options::commit_lease_ms
//    for them (a lease ceiling; see SaveCommitPoints and FORMAT.md).
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "wal/append_batch.h"
#include "base/clock.h"
#include "wal/record.h"

namespace rocksdb {
class Env;
}

namespace kspool::wal {

// Most files RocksDB keeps open at once (its table cache), so that the WAL's file
// descriptors are bounded whatever the backlog; agents reserve descriptors for it.
inline constexpr int kMaxOpenFiles = 256;

struct Options {
  std::string dir;
  Clock* clock = SystemClock::Default();
  // File-system seam: tests pass an Env wrapping a fault-injecting FileSystem.
  std::shared_ptr<rocksdb::Env> env;
  // Capacity: an append that would take the live entries' bytes plus the dead letters'
  // bytes past this fails with RESOURCE_EXHAUSTED (0 = unlimited).
  uint64_t max_bytes = 0;
  // Per topic: an append that would take one topic's live bytes past this fails with
  // RESOURCE_EXHAUSTED; other topics' appends are unaffected (0 = unlimited).
  uint64_t max_topic_bytes = 0;
  // Appends queued for the committer, in bytes: an AppendAsync() that would take them
  // past this is refused at once with RESOURCE_EXHAUSTED, before it is queued, so memory
  // does not grow with clients (0 = unlimited). A request larger than this is accepted
  // only into an empty queue.
  uint64_t max_queue_bytes = 64ull << 20;
  // The dead letters' own limits, enforced by TrimDeadLetters(): the oldest beyond
  // either are removed (0 = no limit of this kind; they still count against max_bytes).
  uint64_t max_dead_letter_bytes = 0;
  int64_t max_dead_letter_age_ms = 0;
  // ForgetIdleTopics() stops tracking a topic with nothing in the log and no append for
  // this long (0 = never), and, beyond max_tracked_topics tracked topics, the longest
  // idle ones with nothing in the log (0 = no cap).
  int64_t topic_idle_forget_ms = 0;
  size_t max_tracked_topics = 0;
  // Most time buckets in the discard report's after-commit-point table; beyond it,
  // adjacent buckets are merged (FORMAT.md, "split").
  size_t max_report_buckets = 4096;
  // Called after each synced group commit with its message count and duration (for
  // metrics); from the committing thread, so it must be cheap and thread-safe.
  std::function<void(size_t messages, double seconds)> on_group_commit;
  // Upper bounds of one group commit.
  size_t max_group_bytes = 8 << 20;
  size_t max_group_requests = 4096;
  // Group commit delay: once an append is queued, the committer waits up to this long
  // for more to join its group before writing (cut short when the group is full or the
  // WAL closes). 0: write at once. Fewer, larger synced writes cost less CPU per message
  // at moderate load, for this much more latency (README, Performance).
  uint64_t group_commit_delay_us = 0;
  // Commit points of scopes (the WAL, a topic) with no live entries may be published up
  // to a persisted ceiling without a write; the ceiling is raised to (point + this) when
  // a point would pass it. So an idle WAL writes at most once per this period, and after
  // a crash receive times may start up to this far ahead of the clock. 0: every change
  // of a commit point is written.
  int64_t commit_lease_ms = 10'000;
  // The delivery index (Settle, TrimDeliveries): outcomes older than this (by the time
  // they were settled), and the oldest beyond this many stored bytes, are forgotten
  // (0 = no limit of this kind).
  int64_t delivery_retention_ms = 3'600'000;
  uint64_t delivery_retention_bytes = 256ull << 20;
  // For inspection tools: opens RocksDB read-only and writes nothing, not even on open,
  // so it works on a running agent's WAL and on a copy. Reads see the WAL as it was at
  // Open(). A directory that is not a kspool WAL is refused (NOT_FOUND when it does
  // not exist, else FAILED_PRECONDITION); writing methods fail with FAILED_PRECONDITION.
  bool read_only = false;
};

// One stored entry as read back. `status` is not OK for an entry that fails to decode
// (then `record` is empty and `raw` holds the stored bytes).
struct Entry {
  uint64_t seq = 0;
  size_t size = 0;  // encoded bytes
  absl::Status status;
  Record record;
  std::string raw;
};

struct AppendResult {
  uint64_t first_seq = 0;  // the request's records got first_seq, first_seq+1, ...
  int64_t receive_time_ms = 0;
};

// What ScanChoosing() offers its chooser for each live entry, read without decoding the
// record: topic "" and receive time 0 when the record is unreadable.
struct ScanCandidate {
  uint64_t seq = 0;
  std::string_view topic;
  int64_t receive_time_ms = 0;
  size_t size = 0;
  int32_t partition = -1;  // explicit partition, or -1
  std::optional<std::string_view> key;
};
enum class ScanChoice {
  kTake,  // decode it into the output
  kSkip,  // pass over it
  kStop,  // end the scan before it
};
struct ScanRange {
  uint64_t from_seq = 0;
  uint64_t to_seq = UINT64_MAX;  // exclusive
  size_t max_keys = 65536;       // bounded work per call: entries offered, taken or not
};

// What happened to one entry, for Settle().
struct Outcome {
  uint64_t seq = 0;
  std::string topic;
  size_t size = 0;
  // Empty: delivered. Otherwise the discard reason (e.g. "msg_size_too_large").
  std::string discard_reason;
  std::string error_text;
  // The stored record, kept in the dead-letter store on discard. If it does not decode,
  // `topic` is only a guess: Settle charges the discard to the topic whose ledger owns
  // the entry (FORMAT.md, corrupt records).
  std::string raw;
  int64_t receive_time_ms = 0;  // 0: unknown (an undecodable record)
  // Delivered: where Kafka put it (from the delivery report).
  int32_t partition = -1;
  int64_t offset = -1;
  // When the outcome was known, wall clock ms; 0: Settle() uses its clock's time.
  int64_t time_ms = 0;
};

// What became of one sequence number (LookupDeliveries, ScanDeliveries).
struct Delivery {
  enum class State {
    kUnknown,    // not kept (below the index's floor), not assigned yet, or never an entry
    kPending,    // live in the log
    kDelivered,  // settled as delivered: topic, partition, offset
    kDiscarded,  // settled as discarded: reason and error (a dead letter)
  };
  uint64_t seq = 0;
  State state = State::kUnknown;
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
  int64_t time_ms = 0;  // when the outcome was known
  std::string discard_reason;
  std::string error;  // discard: Kafka's text; unknown: why it is not known
};

// What one TrimDeliveries() removed.
struct DeliveryTrim {
  uint64_t messages = 0;  // outcomes forgotten
  uint64_t bytes = 0;     // stored bytes freed
  bool more = false;      // stopped at the per-call bound with more to remove
};

// A discarded entry, as kept in the dead-letter store.
struct DeadLetter {
  uint64_t seq = 0;
  int64_t discard_time_ms = 0;
  std::string reason;
  std::string error_text;
  std::string raw;  // the original record bytes
};

struct Counts {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

struct TopicStats {
  Counts accepted;
  Counts delivered;
  std::map<std::string, Counts> discarded;  // by reason
  // Of the discarded, those later removed from the dead letters by a limit ("size" or
  // "age"). Informational: the ledger counts them as discarded.
  std::map<std::string, Counts> dead_dropped;
  // Derived: still in the log.
  Counts pending() const;
};

struct Stats {
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t next_seq = 0;
  std::optional<uint64_t> oldest_seq;
  std::string agent_id;
  std::map<std::string, TopicStats> topics;
  // Synced write batches issued: group commits, settles, commit points and their lease,
  // dead-letter replay and purge, and the writes of Open, Reopen and a clean close
  // (RocksDB may merge concurrent ones into one fsync). Not RocksDB's own syncs of
  // flushed or compacted tables.
  uint64_t fsyncs = 0;
  uint64_t group_commits = 0;      // synced append groups that succeeded
  uint64_t appends = 0;            // Append() calls that succeeded
  uint64_t appended_messages = 0;  // messages those calls wrote
  uint64_t capacity_bytes = 0;     // Options::max_bytes
  Counts dead_letters;             // in the dead-letter store (bytes: stored values)
  uint64_t queued_bytes = 0;       // appends waiting for the committer
  // Appends refused since open, by cause: "wal_full", "topic_full", "append_queue_full".
  std::map<std::string, uint64_t> refused;
  std::map<std::string, uint64_t> topic_full_refused;  // by topic (tracked topics only)
  size_t tracked_topics = 0;       // topics whose commit points are kept
  uint64_t topics_forgotten = 0;   // since open
  // The delivery index: outcomes kept and their stored bytes (keys + values, what
  // Options::delivery_retention_bytes bounds), and the floor: every sequence number
  // below it is forgotten (reported as unknown).
  Counts delivery_index;
  uint64_t delivery_floor_seq = 0;
  size_t report_buckets = 0;       // time buckets of the report's after table
  uint64_t report_coarsenings = 0; // times they were merged, since open
};

// What one TrimDeadLetters() removed, by the limit that removed it.
struct DeadLetterTrim {
  Counts by_size;
  Counts by_age;
  bool more = false;  // stopped at the per-call bound with more to remove: call again
};

inline constexpr char kOutcomeDelivered[] = "delivered";

// Settled messages of one outcome: how many, how large, received when.
struct OutcomeCounts {
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t min_receive_ms = 0;  // meaningful when count > 0
  int64_t max_receive_ms = 0;
  void Add(const OutcomeCounts& o);
};
// topic -> outcome ("delivered" or a discard reason) -> counts.
using OutcomeTable = std::map<std::string, std::map<std::string, OutcomeCounts>>;

// The discard report built on the commit point. `at_or_before` is cumulative and only
// grows: for two reports, the difference is exactly what happened to the messages
// received between their commit points, also across restarts. `commit_point_ms` is the
// point the counts are exact at: the saved global commit point, or an earlier bucket
// boundary when the after table was coarsened (Options::max_report_buckets); it never
// decreases.
struct Report {
  int64_t commit_point_ms = 0;
  OutcomeTable at_or_before;  // messages received at or before commit_point_ms
  OutcomeTable after;         // settled messages received after it (so far)
  std::map<std::string, TopicStats> ledger;
};

struct CommitPoints {
  int64_t global_ms = 0;
  std::map<std::string, int64_t> topics_ms;
};

// A dead letter moved back into the log by ReplayDeadLetters().
struct ReplayedEntry {
  uint64_t dead_seq = 0;  // its sequence number as a dead letter (when first accepted)
  uint64_t seq = 0;       // its new sequence number in the log
  std::string topic;
  int64_t receive_time_ms = 0;  // its new receive time
};

// Receives the outcome of one AppendAsync(). It runs on the committer thread and holds
// up the next group commit while it runs, so it must be short and must not block.
using AppendCallback = absl::AnyInvocable<void(absl::StatusOr<AppendResult>) &&>;

class Wal {
 public:
  virtual ~Wal() = default;

  // Opens (creating if needed) and recovers the WAL in options.dir. Refuses a WAL of
  // a newer format version with FAILED_PRECONDITION. Does not scan the log.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Wal>> Open(Options options);

  // Durably appends a batch. UNAVAILABLE on an I/O error (sticky until reopen).
  // Blocks until the batch is fsynced or refused.
  [[nodiscard]] absl::StatusOr<AppendResult> Append(AppendBatch batch);
  // The same outcome as Append(), delivered to `done` instead of returned.
  virtual void AppendAsync(AppendBatch batch, AppendCallback done) = 0;

  // Reads up to max_entries / max_bytes live entries with seq >= from_seq, in order.
  [[nodiscard]] virtual absl::Status Scan(uint64_t from_seq, size_t max_entries, size_t max_bytes,
                                          std::vector<Entry>* out) = 0;

  // For a reader that keeps a read position per topic: offers each live entry of the
  // range, in order, to `choose`, and decodes the ones it takes into *out. *next is set
  // so that every entry below it was offered (taken or skipped) and none at or above.
  [[nodiscard]] virtual absl::Status ScanChoosing(
      const ScanRange& range, const std::function<ScanChoice(const ScanCandidate&)>& choose,
      std::vector<Entry>* out, uint64_t* next) = 0;

  // Removes delivered or discarded entries; see the contract above.
  [[nodiscard]] virtual absl::Status Settle(const std::vector<Outcome>& outcomes) = 0;

  // The lowest receive time that any entry with seq >= from_seq can have: present,
  // being written, or still to come. Raises the floor of future receive times so that
  // the answer stays true; the commit point is this minus one.
  [[nodiscard]] virtual absl::StatusOr<int64_t> ReceiveTimeBound(uint64_t from_seq) = 0;

  // Makes `points` safe to publish: once it returns OK, no later SavedCommitPoints(),
  // in this process or after a crash and restart, is below them, and future receive
  // times exceed them. A point below the saved one is raised to it (saved points never
  // decrease). A point of a scope (the WAL, or a topic) that has live entries is written
  // (synced) at once; one of a scope with none, up to the persisted lease ceiling, needs
  // no write (an append that gives the scope entries persists it in its own batch, and
  // an Open after a crash starts such scopes at the ceiling). A point past the ceiling
  // raises it, in one synced write with the points. Whenever the global point moves,
  // settled messages received at or before it move into the report's cumulative
  // `at_or_before` counts; that is written in the same batch as the point.
  [[nodiscard]] virtual absl::Status SaveCommitPoints(const CommitPoints& points) = 0;
  // The commit points saved last. After an Open: at or above every point published
  // before (possibly by an earlier process), and still valid; after a crash, scopes
  // without live entries start at the lease ceiling.
  virtual CommitPoints SavedCommitPoints() const = 0;

  // Removes the oldest dead letters (in sequence order) while their bytes exceed
  // Options::max_dead_letter_bytes, then those discarded longer than
  // Options::max_dead_letter_age_ms ago, stopping at the first younger one. Counts
  // them per topic under `dead_dropped` in the same atomic batch (unsynced: a crash may
  // bring them back, counted as before). Removes at most a bounded amount per call.
  [[nodiscard]] virtual absl::StatusOr<DeadLetterTrim> TrimDeadLetters() = 0;
  // Topics whose commit points are tracked: every topic with live entries, or an
  // append in the last Options::topic_idle_forget_ms, or a saved commit point.
  virtual std::vector<std::string> TrackedTopics() const = 0;
  // Stops tracking the topics idle for Options::topic_idle_forget_ms (nothing live, no
  // append), and beyond Options::max_tracked_topics the longest idle with nothing live:
  // their saved commit points are deleted, SaveCommitPoints() ignores them from then
  // on, and future receive times stay above their last points. Their counters stay.
  // Returns the topics forgotten.
  [[nodiscard]] virtual absl::StatusOr<std::vector<std::string>> ForgetIdleTopics() = 0;

  // Compacts away the dead range below the oldest live entry.
  [[nodiscard]] virtual absl::Status CompactDeadRange() = 0;

  virtual Stats GetStats() const = 0;
  // A report at the last saved commit point.
  virtual Report GetReport() const = 0;
  virtual std::string agent_id() const = 0;
  // Sticky write error, OK while healthy.
  virtual absl::Status health() const = 0;
  // After a write error: closes and reopens the RocksDB directory (replaying what is
  // durable) and accepts appends again if that works. A no-op while healthy. Entries
  // of a failed append may reappear below sequence numbers already scanned; a reader
  // that sees reopens() change must scan again from the head.
  [[nodiscard]] virtual absl::Status Reopen() = 0;
  virtual uint64_t reopens() const = 0;

  // Reads dead letters with seq >= from_seq, in order.
  [[nodiscard]] virtual absl::Status ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                                                     std::vector<DeadLetter>* out) = 0;
  // Counts the live entries per topic by scanning the whole log (for verification:
  // the persisted counters must agree with it). Undecodable entries count under "".
  [[nodiscard]] virtual absl::Status CountLive(std::map<std::string, Counts>* out) = 0;

  // The delivery index (rocks_wal_delivery*.cc; FORMAT.md "Column family `delivery`").
  // Readers never block Settle() or appends; the read-only view serves both readers.
  //
  // One Delivery per element of `seqs`, in the order given (repeats allowed), appended
  // to *out: the settled outcome if the index holds it (also below the floor: an entry
  // stuck there and settled late), else PENDING if the entry is live, else UNKNOWN with
  // `error` saying why: "older than the delivery index keeps (oldest kept: F)", "not
  // assigned yet (next: N)", "no message was accepted with this sequence number", or
  // "sequence numbers start at 1". The index and the log are read in one snapshot, so
  // an entry settled meanwhile is never reported as neither. Meant for up to about
  // 10,000 numbers per call (they are sorted; one seek serves a whole run).
  [[nodiscard]] virtual absl::Status LookupDeliveries(const std::vector<uint64_t>& seqs,
                                                      std::vector<Delivery>* out) = 0;
  // The feed: the outcomes of sequence numbers in [from_seq, head), in order, where
  // every entry below head is settled (head is read first, so nothing returned can
  // change, and an unsettled entry holds back every later outcome); at most max_entries,
  // appended to *out. *next is where to continue: every outcome in [from_seq, *next)
  // was returned; max(from_seq, head) once caught up. Sequence numbers that never held
  // an entry are skipped. OUT_OF_RANGE when from_seq is below the floor
  // (forgotten outcomes), also when a trim raised it while the call ran.
  [[nodiscard]] virtual absl::Status ScanDeliveries(uint64_t from_seq, size_t max_entries,
                                                    std::vector<Delivery>* out,
                                                    uint64_t* next) = 0;
  // Forgets the oldest outcomes (whole runs, in sequence order) while the index's bytes
  // exceed Options::delivery_retention_bytes, then those known at least
  // Options::delivery_retention_ms ago (by the Clock), stopping at the first younger
  // one; raises the floor past them in the same batch, not synced: a crash may bring
  // them back, with the totals and floor as before. At most 65,536 runs per call
  // (DeliveryTrim::more: call again). Waits for a Settle() in progress.
  [[nodiscard]] virtual absl::StatusOr<DeliveryTrim> TrimDeliveries() = 0;

  // Operator tools (kspoolctl); rocks_wal_admin.cc, rocks_wal_replay.cc.
  //
  // The live entry with the highest sequence number (decoded as Scan() does), or
  // nullopt when the log is empty.
  [[nodiscard]] virtual absl::StatusOr<std::optional<Entry>> Newest() = 0;
  // Moves the dead letters `seqs` back into the log, in sequence order, under new
  // sequence numbers and one new receive time, so that an agent delivers them again.
  // One synced write batch appends them, deletes them from the dead letters and counts
  // them as accepted again (the ledger accepted = delivered + discarded + pending keeps
  // holding; their discard stays counted). All or nothing: NOT_FOUND if one is not a
  // dead letter, FAILED_PRECONDITION if one does not hold a decodable record (a
  // `corrupt` one cannot be replayed, only purged). Waits for group commits in flight.
  [[nodiscard]] virtual absl::StatusOr<std::vector<ReplayedEntry>> ReplayDeadLetters(
      const std::vector<uint64_t>& seqs) = 0;
  // Deletes the dead letters `seqs` in one synced batch; the counters keep their
  // discard. All or nothing: NOT_FOUND if one is not a dead letter.
  [[nodiscard]] virtual absl::Status PurgeDeadLetters(const std::vector<uint64_t>& seqs) = 0;
};

}  // namespace kspool::wal
