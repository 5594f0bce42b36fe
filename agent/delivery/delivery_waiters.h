// DeliveryWaiters: Sends with WAIT_FOR_KAFKA waiting for the outcomes of their
// sequence numbers. The drain loop tells it of outcomes once they are settled, so in
// the WAL's delivery index (Resolve; also those of a settle that failed, so that a WAL
// write error does not leave a waiter hanging); a waiter completes when each of its
// messages has an outcome, when its deadline passes, or when it is cancelled — exactly
// once, whichever comes first. It keeps no outcome beyond that: GetDeliveryStatus asks
// the index. While a waiter waits it holds CompactOutcomes::kSlotBytes per message
// (compact_outcomes.h), so that many waiting messages cost little; the caller charges
// that memory to its bound (agent/api).
//
// The race it closes: a Send learns its sequence numbers only when its append
// completes, and by then the drain may already have read, produced and settled them. So
// a Send reserves a waiter before it appends (Reserve). While any reservation has no
// sequence numbers yet, outcomes that match no waiter are kept (briefly: only those
// settled after the oldest such reservation was made), and Assign() takes its own from
// them. Outcomes settled before a reservation cannot be its own: its sequence numbers
// are assigned after it. With no reservation open nothing is kept, so WAIT_FOR_WAL
// traffic costs one atomic load per outcome.
//
// Callbacks run on the thread that completes the waiter (the drain loop's for Resolve,
// the WAL committer's for Assign, the caller's for Cancel and ExpireDue), outside the
// lock; they must be short and must not block.
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "agent/delivery/compact_outcomes.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "wal/outcome.h"

namespace kspool::agent {

class DeliveryWaiters {
 public:
  // OK with one outcome per message (in sequence order), DEADLINE_EXCEEDED,
  // CANCELLED, or UNAVAILABLE when the agent stops.
  using Done = absl::AnyInvocable<void(absl::Status, std::vector<wal::Outcome>) &&>;
  using Id = uint64_t;

  // The most a waiter for `n` messages, whose distinct topics (`topics` of them) have
  // `topic_bytes` of names, holds while it waits (its slots, tables and own state):
  // what a caller charges to its bound before it reserves one.
  static size_t HeldBytes(size_t n, size_t topics, size_t topic_bytes) {
    return kWaiterBytes + CompactOutcomes::EstimateBytes(n, topics, topic_bytes);
  }
  // A waiter's own state (its entries in the maps, the caller's callback).
  static constexpr size_t kWaiterBytes = 512;

  // `clock`: the monotonic clock deadlines are measured on.
  explicit DeliveryWaiters(Clock* clock);
  // Stops the expiry thread and completes every waiter left with UNAVAILABLE.
  ~DeliveryWaiters();

  // Runs ExpireDue() on a thread of its own until destruction.
  void StartExpiry();
  // The agent stops: completes every assigned waiter with UNAVAILABLE, and each one
  // assigned from now on at once. Reserve, Cancel and Abandon keep working.
  void Close();

  // Before the append: a waiter and its callback.
  [[nodiscard]] Id Reserve(Done done);
  // After the append: the waiter's messages are first_seq .. first_seq + n - 1, and it
  // expires at the monotonic deadline (0: never). May complete it at once, from
  // outcomes settled meanwhile or a deadline already passed.
  void Assign(Id id, uint64_t first_seq, size_t n, int64_t deadline_mono_ms);
  // The append failed: forgets the reservation without calling its callback.
  void Abandon(Id id);
  // The client went away: completes the waiter with CANCELLED if it still waits.
  void Cancel(Id id);
  // Settled outcomes (or those of a failed settle): delivers each to the waiter of its
  // sequence; the first outcome of a message stands.
  void Resolve(const std::vector<wal::Outcome>& outcomes);
  // Completes the waiters whose deadline is at or before `now_mono_ms`.
  void ExpireDue(int64_t now_mono_ms);

  size_t waiting() const;
  // Whether any waiter or reservation is open (cheap: one atomic load).
  bool active() const { return active_.load() > 0; }
  size_t kept_outcomes() const;  // outcomes kept for open reservations (tests)

 private:
  struct Waiter {
    Done done;
    int64_t deadline = 0;
    uint64_t first = 0;  // valid once assigned
    size_t remaining = 0;
    CompactOutcomes got;  // kSlotBytes per message while it waits
    uint64_t reserved_tick = 0;
    bool assigned = false;
  };
  struct Kept {
    uint64_t tick;
    wal::Outcome outcome;
  };
  using Completion = std::pair<Done, absl::Status>;

  // Fills `w` with `o` if it is one of its messages; true when it completes `w`.
  static bool Fill(Waiter& w, const wal::Outcome& o);
  void RemoveLocked(Id id, Waiter& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PruneKeptLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpiryLoop();

  Clock* const clock_;
  mutable Mutex mu_;
  CondVar wake_;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;  // one per Resolve()
  std::map<Id, std::unique_ptr<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Id> by_first_seq_ ABSL_GUARDED_BY(mu_);        // assigned waiters
  std::multiset<uint64_t> open_reservations_ ABSL_GUARDED_BY(mu_);  // their ticks
  std::multimap<int64_t, Id> deadlines_ ABSL_GUARDED_BY(mu_);
  std::deque<Kept> kept_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> active_{0};  // waiters, for Resolve's fast path
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread expiry_;
};

}  // namespace kspool::agent
