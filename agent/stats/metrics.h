// Metrics: every Prometheus metric of the agent, declared in this one place. Event
// metrics (histograms, error counters) are recorded by the parts as things happen;
// state metrics (commit points, WAL size, persisted delivered/discarded totals) are
// read from their sources at scrape time, so totals restored from the WAL after a
// restart are what a scrape sees.
// Thread safety: every method may be called from any thread.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agent/drain/drain_metrics.h"
#include "agent/drain/stuck_topic.h"
#include "base/clock.h"
#include "wal/log_status.h"

namespace kspool::agent {

class CommitTracker;

// Where the scrape-time metrics come from.
struct MetricSources {
  wal::LogStatus* wal = nullptr;
  CommitTracker* tracker = nullptr;
  std::function<uint64_t()> inflight;
  std::function<int()> brokers_up;  // 0 until known
  Clock* clock = SystemClock::Default();
  std::function<std::vector<StuckTopic>()> stuck;  // optional
  // The front door (all optional): open gRPC connections and their cap; memory held by
  // requests being received and appended, and its bound (--max-receive-memory).
  std::function<uint64_t()> grpc_connections;
  uint64_t grpc_connections_max = 0;
  std::function<uint64_t()> receive_memory_used;
  uint64_t receive_memory_limit = 0;
  // Delivery confirmation (all optional): the index's bounds, waiting Sends, watchers.
  int64_t delivery_retention_ms = 0;
  uint64_t delivery_retention_bytes = 0;
  std::function<uint64_t()> waiting_sends;
  // What waiting Sends hold, and its bound (--max-waiting-memory; 0 = none).
  std::function<uint64_t()> waiting_memory_used;
  uint64_t waiting_memory_limit = 0;
  std::function<uint64_t()> delivery_watchers;
};

class Metrics : public DrainMetrics {
 public:
  explicit Metrics(const std::string& version);

  void SetSources(MetricSources sources);

  void ObserveGroupCommit(size_t messages, double seconds);
  void ObserveSend(int grpc_code, double seconds);
  void SendRejected(int grpc_code);
  void ProduceError(const std::string& error) override;
  void Redelivered(const std::string& topic) override;
  void HeartbeatSent(const std::string& topic, uint64_t n);
  void HeartbeatFailed(const std::string& topic);
  void WalReopened() override;
  // A client connection the gRPC listener closed at once: "connection_limit",
  // "out_of_descriptors".
  void ConnectionRefused(std::string_view reason);
  // A degraded-mode event without a metric of its own: "wal_reopen_failed",
  // "wal_scan_failed", "settle_failed", "commit_point_failed", "producer_replaced".
  void Degraded(const std::string& event) override;
  // Reconciliation at start (agent/drain/reconciler.h).
  void ReconcileFound(uint64_t messages) override;
  void ReconcileRead(uint64_t bytes, double seconds) override;
  void ReconcileEndedEarly(const std::string& reason) override;
  // The HTTP server closed a connection to keep serving (reasons in http_server.h).
  void HttpDropped(std::string_view reason);
  // The Bruce/Dory-format input (bruce_ingest.h): makes its series visible at 0 (called
  // when it is configured); input refused, by reason; messages appended, by transport.
  void InitBruce();
  void BruceRejected(std::string_view reason);
  void BruceAppended(std::string_view transport, uint64_t n);

  // Access control (--acl, access_control.h): refusals by identity label (an identity
  // the file names, or "other"), and the number of rules in force.
  void AclDenied(const std::string& identity);
  void QuotaRefused(const std::string& identity);
  void AclRulesLoaded(size_t rules);

  // The Prometheus text exposition of every metric.
  std::string Serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& fsync_seconds_;
  prometheus::Family<prometheus::Histogram>& group_commit_messages_;
  prometheus::Family<prometheus::Histogram>& send_seconds_;
  prometheus::Family<prometheus::Counter>& send_rejected_;
  prometheus::Family<prometheus::Counter>& produce_errors_;
  prometheus::Family<prometheus::Counter>& redelivered_;
  prometheus::Family<prometheus::Counter>& heartbeats_;
  prometheus::Family<prometheus::Counter>& heartbeat_failures_;
  prometheus::Family<prometheus::Counter>& wal_reopens_;
  prometheus::Family<prometheus::Counter>& degraded_;
  prometheus::Family<prometheus::Counter>& reconcile_found_;
  prometheus::Family<prometheus::Counter>& reconcile_bytes_;
  prometheus::Family<prometheus::Counter>& reconcile_seconds_;
  prometheus::Family<prometheus::Counter>& reconcile_ended_early_;
  prometheus::Family<prometheus::Counter>& connections_refused_;
  prometheus::Family<prometheus::Counter>& http_dropped_;
  prometheus::Family<prometheus::Counter>& bruce_rejected_;
  prometheus::Family<prometheus::Counter>& bruce_appended_;
  prometheus::Family<prometheus::Counter>& acl_denied_;
  prometheus::Family<prometheus::Counter>& quota_refused_;
  prometheus::Family<prometheus::Gauge>& acl_rules_;
  // Series observed on every Send or group commit, resolved once: Family::Add hashes
  // the labels and takes a lock on each call.
  prometheus::Histogram& send_ok_seconds_;
  prometheus::Histogram& fsync_seconds_series_;
  prometheus::Histogram& group_commit_messages_series_;
  std::shared_ptr<prometheus::Collectable> state_;
};

}  // namespace kspool::agent
