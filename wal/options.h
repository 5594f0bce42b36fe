// wal::Options: how a WAL is opened (directory, clock, bounds, group commit, lease,
// delivery retention, read-only). A plain struct: copied into the WAL by Open(), which
// owns its copy; not shared between threads by the WAL afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace rocksdb {
class Env;
}

namespace kspool::wal {

class ReserveFileSystem;  // open_reserve.h

// Most files RocksDB keeps open at once (its table cache), so that the WAL's file
// descriptors are bounded whatever the backlog; agents reserve descriptors for it.
inline constexpr int kMaxOpenFiles = 256;

// The levels of RocksDB's own log lines (its "info log"; info_log.h).
enum class InfoLogLevel { kDebug, kInfo, kWarning, kError };
// Receives RocksDB's log lines (without a trailing newline); called from RocksDB's
// threads, possibly at once, so it must be thread-safe and must not call into the WAL.
using InfoLogSink = std::function<void(InfoLogLevel, std::string_view message)>;

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
  // does not grow with clients (0 = unlimited). A request larger than this is always
  // refused, also by an empty queue.
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
  // RocksDB's info log: its lines of level info and above go here, and no LOG file is
  // written into `dir` (info_log.h says why). Unset: its warnings and errors go to
  // stderr, the rest is dropped.
  InfoLogSink info_log;
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
  // The delivery index (Settle, TrimDeliveries): outcomes released longer ago than this
  // (settled, and every entry below them too: never those above a live entry), and the
  // oldest beyond this many stored bytes (also above a live entry), are forgotten
  // (0 = no limit of this kind).
  int64_t delivery_retention_ms = 3'600'000;
  uint64_t delivery_retention_bytes = 256ull << 20;
  // The reserve (open_reserve.h): a file of this many bytes kept in `dir`, deleted before
  // an open on a volume too full to open, and while it is missing appends are refused
  // with UNAVAILABLE ("no_reserve"). RocksDB's unflushed logs are kept to half of it, so
  // that what an open flushes fits in it. 0: no reserve (the agent resolves its flag's
  // 0, automatic, before). `reserve_fs`: the file-system seam, null for the real one.
  uint64_t reserve_bytes = 0;
  std::shared_ptr<ReserveFileSystem> reserve_fs;
  // For inspection tools: opens RocksDB read-only and writes nothing, not even on open,
  // so it works on a running agent's WAL and on a copy. Reads see the WAL as it was at
  // Open(). A directory that is not a kspool WAL is refused (NOT_FOUND when it does
  // not exist, else FAILED_PRECONDITION); writing methods fail with FAILED_PRECONDITION.
  bool read_only = false;
};

}  // namespace kspool::wal
