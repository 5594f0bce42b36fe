// Reconciler: what the drain needs to find out, after a restart, which of the entries it
// found in the WAL ("in doubt": below the first sequence number this process appends)
// Kafka already holds, as an interface (as Producer is), so that the drain never waits
// for Kafka reads and its gating runs as unit tests against a scripted fake.
// KafkaReconciler (agent/kafka/kafka_reconciler.h) is the real one: it reads the topic's
// partitions back (PartitionScanner) off the drain's thread.
//
// The drain asks once per topic with in-doubt entries (Reconcile), and again
// (ReconcileAgain) for a topic some of whose entries this process produced may be in
// Kafka unreported: in flight when the producer was replaced after a fatal error, or
// reported failed although possibly persisted. Until told, it holds
// those entries back: a keyed (or explicit-partition) lane until its partition is
// released, an unkeyed in-doubt entry until the whole topic is. The answers come from
// Poll() as ReconcileResults, in any number, each releasing some partitions and naming
// the copies found in them (a copy is always told in the same result as, or before, the
// release of its partition). A partition that cannot be read is released late or never:
// the drain ends every hold after DrainOptions::reconcile_max_hold_ms whatever the
// reconciler says (a duplicate is possible then, a loss never).
// Thread safety: Reconcile() and Poll() are called from the drain's thread only; the
// implementation does its reading elsewhere and never blocks them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kspool::agent {

// An entry's copy found in Kafka: settle the entry as delivered there.
struct FoundCopy {
  uint64_t seq = 0;
  int32_t partition = -1;
  int64_t offset = -1;
};

struct ReconcileResult {
  std::string topic;
  // Partitions read to their end, or given up on (ended_early says why): their in-doubt
  // entries not found are produced.
  std::vector<int32_t> released;
  // Every partition of the topic is released: its unkeyed in-doubt entries may go.
  bool all_released = false;
  std::vector<FoundCopy> found;
  // Why a release came before the partition was read to its end ("max_bytes",
  // "time_budget", "unreadable", "topic_missing"...): empty when it was read. The drain
  // counts it (DrainMetrics::ReconcileEndedEarly) and logs it.
  std::string ended_early;
  uint64_t bytes_read = 0;  // by the reads this result reports
  double seconds = 0;       // the time they took
  uint64_t round = 0;       // of the request it answers: 0 for Reconcile()
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // Starts reconciling `topic`, whose oldest in-doubt entry was received at
  // `oldest_receive_ms` (wall clock). Returns at once; asked once per topic.
  virtual void Reconcile(const std::string& topic, int64_t oldest_receive_ms) = 0;
  // Reconciles `topic` again from its settled watermarks as they are now (this process's
  // deliveries raised them; the drain holds them for the partitions it waits for), for
  // entries received from `oldest_receive_ms` on. Its results carry `round` (> 0).
  virtual void ReconcileAgain(const std::string& topic, int64_t oldest_receive_ms,
                              uint64_t round) = 0;
  // Appends the results ready since the last call; never waits.
  virtual void Poll(std::vector<ReconcileResult>* out) = 0;
};

}  // namespace kspool::agent
