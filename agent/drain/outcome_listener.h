// OutcomeListener: who the drain loop tells what became of each message, twice at most:
// when the outcome is known (Kafka's acknowledgement, or a discard decided), before it
// is settled, and once Settle() has made it durable. The agent's listener answers Sends
// that wait for Kafka (Known) and wakes delivery watchers (Settled).
// Thread safety: every method is called on the drain loop's thread; each must be short
// and must not block. The listener outlives the loop.
#pragma once

#include <vector>

#include "wal/wal.h"

namespace kspool::agent {

class OutcomeListener {
 public:
  virtual ~OutcomeListener() = default;
  // Whether someone waits for outcomes before they settle (WAIT_FOR_KAFKA Sends). Asked
  // per outcome, so it must be cheap: a waiter that appears later cannot be waiting for
  // a message that was already read (its sequence numbers come later).
  virtual bool Wanted() const = 0;
  // Outcomes as soon as they are known, gathered while Wanted() said yes, once per
  // pass of the loop; their `raw` is left out.
  virtual void Known(const std::vector<wal::Outcome>& outcomes) = 0;
  // Every batch of outcomes once Settle() has made it durable.
  virtual void Settled(const std::vector<wal::Outcome>& outcomes) = 0;
};

}  // namespace kspool::agent
