// The WAL's counters (Stats, per topic TopicStats, Counts) and its commit points
// (CommitPoints), as returned by LogStatus. Plain values: each call returns a copy the
// caller owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kspool::wal {

struct Counts {
  uint64_t count = 0;
  uint64_t bytes = 0;
  void Add(const Counts& o) {
    count += o.count;
    bytes += o.bytes;
  }
};

// The topic the counters of forgotten topics are summed under (Ledger::PlanFold), so that
// what the WAL keeps per topic grows with the topics tracked, not with every name ever
// sent. No Kafka topic can be named so (Kafka allows only [a-zA-Z0-9._-]).
inline constexpr char kForgottenTopics[] = "(forgotten)";

struct TopicStats {
  Counts accepted;
  Counts delivered;
  std::map<std::string, Counts> discarded;  // by reason
  // Of the discarded, those later removed from the dead letters by a limit ("size" or
  // "age"). Informational: the ledger counts them as discarded.
  std::map<std::string, Counts> dead_dropped;
  // Settled messages whose batch record is still stored: it holds live messages too,
  // and its bytes leave the disk only with its last one (FORMAT.md, "Settling part of a
  // record"). Charged against the bounds with pending() (stored()).
  Counts held;
  // Derived: still in the log.
  Counts pending() const;
  // Adds every counter of `o`.
  void Add(const TopicStats& o);
  // Derived: what the topic's records take in the log, live or held.
  Counts stored() const {
    const Counts p = pending();
    return {p.count + held.count, p.bytes + held.bytes};
  }
};

struct Stats {
  uint64_t entries = 0;
  uint64_t bytes = 0;
  // Of settled messages still stored in part-settled batch records (TopicStats::held):
  // counted with `bytes` against Options::max_bytes.
  uint64_t held_bytes = 0;
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
  // Appends refused since open, by cause: "wal_full", "topic_full", "append_queue_full",
  // "no_reserve".
  std::map<std::string, uint64_t> refused;
  std::map<std::string, uint64_t> topic_full_refused;  // by topic (tracked topics only)
  // The reserve (open_reserve.h): its size while it is held, else 0; missing: appends
  // are refused ("no_reserve"). Both 0/false without a reserve.
  uint64_t reserve_bytes = 0;
  bool reserve_missing = false;
  size_t tracked_topics = 0;       // topics whose commit points are kept
  uint64_t topics_forgotten = 0;   // since open
  // Delivery tallies whose stored bytes did not parse and started again from 0, since
  // open (tally_store.h).
  uint64_t tallies_restarted = 0;
  // The delivery index: outcomes kept and their stored bytes (keys + values, what
  // Options::delivery_retention_bytes bounds), and the floor: every sequence number
  // below it is forgotten (reported as unknown).
  Counts delivery_index;
  uint64_t delivery_floor_seq = 0;
  size_t report_buckets = 0;       // time buckets of the report's after table
  uint64_t report_coarsenings = 0; // times they were merged, since open
};

struct CommitPoints {
  int64_t global_ms = 0;
  std::map<std::string, int64_t> topics_ms;
};

}  // namespace kspool::wal
