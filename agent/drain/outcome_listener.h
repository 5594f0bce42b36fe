// OutcomeListener: who the drain loop tells what became of each message — once, when
// Settle() has made the outcome durable (it is then in the WAL's delivery index, so a
// lookup agrees with what the listener was told). The agent's listener answers Sends
// that wait for Kafka and wakes delivery watchers.
//
// The one exception is a settle that fails (a WAL write error: the drain retries it
// until the WAL reopens, which may take long or never happen): the outcomes of that
// batch are told once through NotSettled(), so that nobody waiting for them hangs, and
// then once more through Settled() if a later settle succeeds.
//
// The outcomes are the drain's wal::Outcome values without the stored record (`raw` is
// empty: a discard's record is in the dead letters); `time_ms` is always set.
// Thread safety: every method is called on the drain loop's thread; each must be short
// and must not block. The listener outlives the loop.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "wal/outcome.h"

namespace kspool::agent {

class OutcomeListener {
 public:
  virtual ~OutcomeListener() = default;
  // A batch of outcomes that Settle() has made durable; each outcome once.
  virtual void Settled(const std::vector<wal::Outcome>& outcomes) = 0;
  // A batch whose Settle() failed with `error`: known (Kafka acknowledged them, or a
  // discard was decided) but not durable. Each outcome at most once, before its
  // Settled(), however often the settle is retried.
  virtual void NotSettled(const std::vector<wal::Outcome>& outcomes,
                          const absl::Status& error) = 0;
};

}  // namespace kspool::agent
