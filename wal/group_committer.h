// GroupCommitter: a WAL's append queue and its committer thread (group commit).
//
// Appends queue here. One thread takes the queue's first requests as a group (bounded by
// bytes and count), has the owner write them (Sink::CommitGroup: admission, sequence
// numbers, one synced write batch), then runs their callbacks without the lock. Appends
// that arrive during the fsync queue up and form the next, larger group: groups grow
// with load, and no caller's thread waits on the disk. With a gathering delay the
// committer also waits that long after the first append of a group, so that groups grow
// at moderate load too. A group being written stays at the queue's head until it is
// done, so idle() also means "no group commit in flight".
//
// Thread safety: no lock of its own. Its state is guarded by the owner's mutex, which
// every method but Start/Stop takes as its `mu` argument, held: the owner keeps the
// ledger under the same mutex, so that a group's admission, numbering and accounting
// are one critical section, with no second lock per append. The thread takes `mu`
// itself and calls the Sink with it held. Ownership: the Sink is borrowed until Stop().
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "wal/append_batch.h"
#include "wal/append_log.h"

namespace kspool::wal {

class GroupCommitter {
 public:
  // One append waiting in the queue, and then its outcome.
  struct Writer {
    AppendBatch batch;
    AppendCallback done;
    absl::Status status;
    AppendResult result;
  };

  struct Limits {
    size_t max_group_requests = 0;
    size_t max_group_bytes = 0;
    uint64_t max_queue_bytes = 0;        // 0: unbounded
    uint64_t group_commit_delay_us = 0;  // 0: commit at once
  };

  // A group being formed at the queue's head (NextForGroup): the writers in it, in
  // order, and their bytes. The `examined` writers at the head are finished once the
  // group is written (those left out with their refusal already set).
  struct Group {
    std::vector<Writer*> writers;
    size_t examined = 0;
    size_t bytes = 0;
    void Add(Writer* w) {
      writers.push_back(w);
      bytes += w->batch.bytes();
    }
  };

  // The owner's side, called on the committer thread with `mu` held.
  class Sink {
   public:
    virtual ~Sink() = default;
    // False once appends can only fail (a sticky write error): nobody waits to gather.
    virtual bool Accepting() const = 0;
    // Forms a group (NextForGroup), writes it, releasing `mu` only during the write, and
    // sets the status and result of every examined writer. Returns Group::examined.
    virtual size_t CommitGroup() = 0;
  };

  explicit GroupCommitter(Limits limits) : limits_(limits) {}
  // Stop() must have been called if Start() was.
  ~GroupCommitter() = default;
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Starts the committer thread (once).
  void Start(Mutex* mu, Sink* sink);
  // Commits what is queued, then joins the thread (if started); refuses further appends.
  // Called once, by the owner's destructor, before the Sink goes.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Queues an append and wakes the committer if it should write now. UNAVAILABLE after
  // Stop(); RESOURCE_EXHAUSTED (nothing queued) when it would overfill the queue
  // (Limits::max_queue_bytes), also a request larger than the bound alone, even into an
  // empty queue (its error names --max-append-queue-bytes and says it can never be
  // queued). On an error `batch` and `done` are left to the caller.
  absl::Status Enqueue(Mutex* mu, AppendBatch& batch, AppendCallback& done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // No append queued and no group being written.
  bool idle([[maybe_unused]] Mutex* mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return queue_.empty();
  }
  // Bytes of the batches queued (a group being written included).
  uint64_t queued_bytes([[maybe_unused]] Mutex* mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return queued_bytes_;
  }
  // The next writer that fits into `group` (counted in Group::examined), or null when
  // the group is complete; the caller admits it (Group::Add) or sets its refusal.
  Writer* NextForGroup(Mutex* mu, Group* group) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

 private:
  // The thread: commits groups until stopping_ and the queue is empty.
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits up to Limits::group_commit_delay_us for more appends to join the queue.
  void GatherGroup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool GroupFull() const {
    return queue_.size() >= limits_.max_group_requests || queued_bytes_ >= limits_.max_group_bytes;
  }

  const Limits limits_;
  // Set by Start(); the owner's mutex, which guards everything below (see the top).
  Mutex* mu_ = nullptr;
  Sink* sink_ = nullptr;
  std::thread thread_;
  // Appends waiting for the committer; a group being written stays at the front.
  std::deque<Writer> queue_;
  uint64_t queued_bytes_ = 0;  // batches in queue_
  CondVar work_cv_;            // signalled when queue_ gains a writer or stopping_ is set
  bool stopping_ = false;
  // The committer waits out the gathering delay: appends then wake it only when they
  // fill the group.
  bool gathering_ = false;
};

}  // namespace kspool::wal
