// Agent: wires the WAL, the drain loop, the commit tracker, heartbeats, metrics and
// the gRPC and HTTP servers together, and takes them down in the safe order. Owns all
// of them.
// Thread safety: Start and Shutdown from one thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/security/access_control.h"
#include "agent/security/acl_reloader.h"
#include "agent/api/admin_service.h"
#include "agent/bruce/bruce_ingest.h"
#include "agent/bruce/bruce_listener.h"
#include "agent/bruce/bruce_rejections.h"
#include "agent/drain/commit_tracker.h"
#include "agent/app/config/config.h"
#include "agent/drain/drain_loop.h"
#include "agent/net/grpc_listener.h"
#include "agent/background/heartbeater.h"
#include "agent/http/http_server.h"
#include "agent/kafka/kafka_metadata.h"
#include "agent/kafka/kafka_producer.h"
#include "agent/kafka/kafka_reconciler.h"
#include "agent/drain/partition_cache.h"
#include "agent/stats/metrics.h"
#include "agent/api/spool_service.h"
#include "agent/security/tls_reloader.h"
#include "agent/background/wal_maintenance.h"
#include "wal/wal.h"

namespace kspool::agent {

// Seams for tests: the WAL's file system (fault injection) and the clock.
struct AgentDeps {
  std::shared_ptr<rocksdb::Env> env;
  Clock* clock = SystemClock::Default();
};

class Agent {
 public:
  // Opens the WAL, connects to Kafka, and starts serving. Errors name the part that
  // failed (WAL directory, Kafka option, listen address).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Agent>> Start(const Config& config,
                                                                    AgentDeps deps = {});
  ~Agent();

  // The addresses actually bound (port 0 resolved).
  const std::string& grpc_address() const { return grpc_address_; }
  std::string http_address() const { return http_ ? http_->address() : ""; }
  // The Bruce/Dory-format TCP address bound (port 0 resolved), or "".
  std::string bruce_tcp_address() const {
    return bruce_listener_ ? bruce_listener_->tcp_address() : "";
  }
  const std::string& agent_id() const { return agent_id_; }
  wal::Wal* wal() { return wal_.get(); }
  DrainLoop* drain() { return drain_.get(); }
  Heartbeater* heartbeater() { return heartbeater_.get(); }

  // SIGHUP: re-reads the --acl file (if any) at once; a bad file keeps the old rules.
  void ReloadAcl();

  // Stops accepting Sends (in-flight calls finish), gives in-flight produce the grace
  // period, persists the commit point, closes the WAL. Idempotent.
  void Shutdown();

 private:
  Agent() = default;
  absl::Status StartServers(const Config& config, Clock* clock);
  // --acl: loads the rules, hands them to the services, starts following the file.
  absl::Status StartAccessControl(const Config& config, Clock* clock);
  // The Bruce/Dory-format input, when configured (after the gRPC services).
  absl::Status StartBruce(const Config& config, Clock* clock,
                          std::function<int64_t(absl::StatusCode)> retry_after_ms);
  std::string StatusJson(Clock* clock) const;          // GET /status
  std::string DiscardsJson(AdminService* admin) const;  // GET /discards

  Config config_;
  int64_t started_mono_ms_ = 0;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<wal::Wal> wal_;
  std::unique_ptr<CommitTracker> tracker_;
  std::unique_ptr<KafkaMetadata> metadata_;
  std::unique_ptr<PartitionCache> partitions_;  // uses metadata_
  std::unique_ptr<KafkaReconciler> reconciler_;  // uses wal_, partitions_; tells drain_
  std::unique_ptr<DrainLoop> drain_;            // uses partitions_, reconciler_
  std::unique_ptr<Heartbeater> heartbeater_;
  std::unique_ptr<WalMaintenance> maintenance_;
  // Told by drain_ of settled outcomes, so they outlive it.
  std::unique_ptr<DeliveryWaiters> waiters_;
  std::unique_ptr<DeliveryFeed> feed_;
  std::unique_ptr<OutcomeListener> outcome_listener_;  // drain_'s, to waiters_ and feed_
  std::unique_ptr<AccessControl> access_;      // --acl; used by spool_ and admin_
  std::unique_ptr<AclReloader> acl_reloader_;  // re-reads access_'s file
  std::unique_ptr<SpoolService> spool_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<ReceptionMeter> meter_;   // used by listener_ and spool_
  std::unique_ptr<TlsReloader> tls_;  // its credentials are server_'s
  std::unique_ptr<GrpcListener> listener_;  // hands its connections to server_
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<BruceRejections> bruce_rejections_;  // used by admin_, the two below
  std::unique_ptr<BruceIngest> bruce_ingest_;          // uses wal_, partitions_, drain_
  std::unique_ptr<BruceListener> bruce_listener_;      // uses bruce_ingest_
  std::string grpc_address_;
  std::string agent_id_;
};

}  // namespace kspool::agent
