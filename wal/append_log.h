// wal::AppendLog: the writers' side of the WAL (the gRPC Spool service, the Bruce
// ingest, the heartbeater).
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
//  * After a write error (LogStatus::health) appends fail with UNAVAILABLE. An append
//    whose own write failed (a failed sync) is in doubt: RocksDB may have kept it. Its
//    status says so (AppendInDoubtSeq, appends_in_doubt.h), and after the Reopen()
//    AppendKept() tells whether it was kept: a caller that retries asks first, or it
//    stores the messages twice.
//  * An append fails with RESOURCE_EXHAUSTED, writing nothing, when the live entries
//    plus the dead letters would exceed Options::max_bytes, when one of its topics' live
//    entries would exceed Options::max_topic_bytes, or (at once, before it is queued)
//    when the appends waiting for the committer would exceed Options::max_queue_bytes.
// Thread safety: every method may be called from any thread. Ownership: borrowed from
// the owner of the wal::Wal.
#pragma once

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "wal/append_batch.h"
#include "wal/appends_in_doubt.h"
#include "wal/log_status.h"

namespace kspool::wal {

struct AppendResult {
  uint64_t first_seq = 0;  // the request's records got first_seq, first_seq+1, ...
  int64_t receive_time_ms = 0;
};

// Receives the outcome of one AppendAsync(). It runs on the committer thread and holds
// up the next group commit while it runs, so it must be short and must not block.
using AppendCallback = absl::AnyInvocable<void(absl::StatusOr<AppendResult>) &&>;

class AppendLog : public virtual LogStatus {
 public:
  ~AppendLog() override = default;

  // Durably appends a batch. UNAVAILABLE on an I/O error (sticky until reopen).
  // Blocks until the batch is fsynced or refused.
  [[nodiscard]] absl::StatusOr<AppendResult> Append(AppendBatch batch);
  // The same outcome as Append(), delivered to `done` instead of returned.
  virtual void AppendAsync(AppendBatch batch, AppendCallback done) = 0;
  // Whether the append in doubt that starts at `first_seq` (AppendInDoubtSeq of its
  // failure) was kept: UNAVAILABLE until the WAL has been reopened, NOT_FOUND when it is
  // no longer remembered (AppendsInDoubt::kMaxRemembered).
  [[nodiscard]] virtual absl::StatusOr<bool> AppendKept(uint64_t first_seq) const = 0;
};

}  // namespace kspool::wal
