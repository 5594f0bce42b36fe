// DrainMetrics: what the drain reports to monitoring, in its own terms. The drain knows
// nothing of Prometheus; the agent's metrics registry (agent/stats/metrics.h) implements
// this interface, and drain tests may leave it out (DrainOptions::metrics is optional).
// Thread safety: called from the drain's thread only; implementations must not block.
#pragma once

#include <cstdint>
#include <string>

namespace kspool::agent {

class DrainMetrics {
 public:
  virtual ~DrainMetrics() = default;
  // Kafka refused or failed a produce, by the client's error name.
  virtual void ProduceError(const std::string& error) = 0;
  // An entry of `topic` was produced again after a transient failure.
  virtual void Redelivered(const std::string& topic) = 0;
  // The drain reopened the WAL after a write error.
  virtual void WalReopened() = 0;
  // A degraded-mode event without a metric of its own ("wal_scan_failed", ...).
  virtual void Degraded(const std::string& event) = 0;
  // Reconciliation at start (reconciler.h): entries found already in Kafka; bytes read
  // back and the seconds it took; a hold ended before its partitions were read, by
  // reason ("max_hold", "max_bytes", "time_budget", "unreadable", ...).
  virtual void ReconcileFound(uint64_t /*messages*/) {}
  virtual void ReconcileRead(uint64_t /*bytes*/, double /*seconds*/) {}
  virtual void ReconcileEndedEarly(const std::string& /*reason*/) {}
};

}  // namespace kspool::agent
