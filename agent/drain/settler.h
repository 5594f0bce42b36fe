// Settler: takes finished entries out of the window and the WAL in few batches (issue
// 42's split of the drain: the completion side of Kafka's Sender). It owns the finished
// entries in finishing order, the settle batch and the slots it came from, the outcomes
// the listener was told are not settled yet, and the settles' pacing.
//
// What it guarantees (Check, and the comments at each step):
//  * every finished slot of the window (Slot::kSettling) is listed, so none waits there
//    forever; no slot is left marked part of a batch between two calls;
//  * the window's finished prefix goes out whole, and an entry finished out of order
//    waits at most settle_delay_ms for it (all at once with `all`);
//  * a batch never settles a delivery above an offset of its partition that a finished
//    entry not in the batch holds (TakeLowerOffsets), so a settled watermark never
//    passes an unsettled copy;
//  * a failed settle changes nothing: the outcomes go back into their slots as they
//    were, and the listener hears of them once (OutcomeListener::NotSettled).
// A slot keeps its outcome compactly (Store, Take): a delivery to the entry's own topic
// as its numbers, any other outcome whole.
// Thread safety: none; owned by the drain's loop thread.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_set>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "agent/drain/drain_window.h"
#include "agent/drain/outcome_listener.h"
#include "wal/drain_log.h"
#include "wal/outcome.h"

namespace kspool::agent {

class Settler {
 public:
  struct Options {
    uint64_t settle_delay_ms = 50;        // how long an out-of-order finished entry waits
    uint64_t settle_interval_ms = 5;      // least time between two Settle() calls
    OutcomeListener* outcomes = nullptr;  // optional
  };
  Settler(wal::DrainLog* wal, Options options) : wal_(wal), options_(options) {}

  // Keeps `outcome` in `slot`, and takes it out again whole, exactly as it was kept.
  static void Store(uint64_t seq, Slot& slot, wal::Outcome&& outcome);
  static wal::Outcome Take(uint64_t seq, Slot& slot);
  // Store's compact form: a delivery to the slot's own topic, of its own entry.
  static void KeepDelivered(Slot& slot, int32_t partition, int64_t offset, int64_t time_ms,
                            bool raises_watermark);

  // `slot` (of `seq`, its outcome stored) finished at `now` (monotonic).
  void Finished(uint64_t seq, Slot& slot, int64_t now) {
    slot.state = Slot::kSettling;
    slot.finished_ms = now;
    finished_.push_back(seq);
  }

  // Settles what is due at `now`; every finished entry when `all`. `hold_watermarks`
  // marks the batch's deliveries that must not raise their partition's watermark;
  // `erase` takes a settled slot out of the window. OK when nothing was due; else the
  // WAL's answer (the outcomes then stay in their slots for a later call).
  [[nodiscard]] absl::Status Settle(
      DrainWindow& window, int64_t now, bool all,
      absl::FunctionRef<void(std::vector<wal::Outcome>*)> hold_watermarks,
      absl::FunctionRef<void(DrainWindow::iterator)> erase);

  // The guarantee above, against the window; says what disagrees.
  [[nodiscard]] absl::Status Check(const DrainWindow& window) const;

 private:
  void TakeLowerOffsets(DrainWindow& window, size_t from);
  void TellNotSettled(const absl::Status& error);
  void AddToBatch(DrainWindow::iterator it);

  wal::DrainLog* const wal_;
  const Options options_;
  // Finished entries in finishing order: mostly in sequence order, the window's finished
  // prefix first. An entry here may have left the window already (settled as part of
  // the prefix); Settle drops those as it passes them.
  std::deque<uint64_t> finished_;
  // The batch being settled and the slots it came from, kept for their capacity; empty
  // between two calls.
  std::vector<wal::Outcome> batch_;
  std::vector<DrainWindow::iterator> taken_;
  // Finished entries whose settle failed and that the listener was told of: not told
  // again until a settle succeeds.
  std::unordered_set<uint64_t> told_not_settled_;
  int64_t next_settle_ms_ = 0;
};

}  // namespace kspool::agent
