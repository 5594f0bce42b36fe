#include "agent/agent.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

#include <filesystem>

namespace kspool::agent {
namespace {

// Replaces the port of "host:port" by `port` (for the address bound to port 0).
std::string WithPort(const std::string& addr, int port) {
  if (addr.rfind("unix:", 0) == 0) return addr;
  size_t colon = addr.rfind(':');
  return addr.substr(0, colon) + ":" + std::to_string(port);
}

// Half of the file system that holds (or will hold) `dir`: room for RocksDB's own
// overhead (compaction, tombstones) and for whatever else shares the volume.
uint64_t DefaultWalCapacity(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir);
  std::error_code ec;
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) {
    p = p.parent_path();
  }
  struct statvfs st;
  if (statvfs(p.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_blocks) * st.f_frsize / 2;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> Agent::Start(const Config& config, AgentDeps deps) {
  std::unique_ptr<Agent> a(new Agent());
  wal::Options wo;
  wo.dir = config.wal_dir;
  wo.env = deps.env;
  wo.clock = deps.clock;
  wo.max_bytes = config.wal_max_bytes ? config.wal_max_bytes : DefaultWalCapacity(config.wal_dir);
  absl::StatusOr<std::unique_ptr<wal::Wal>> wal = wal::Wal::Open(wo);
  if (!wal.ok()) return wal.status();
  a->wal_ = std::move(wal).value();
  a->agent_id_ = a->wal_->agent_id();
  wal::Stats stats = a->wal_->GetStats();
  spdlog::info("wal: opened {} (agent id {}): {} entries, {} bytes pending of {} capacity, "
               "next seq {}", config.wal_dir, a->agent_id_, stats.entries, stats.bytes,
               wo.max_bytes, stats.next_seq);

  a->tracker_ = std::make_unique<CommitTracker>(a->wal_.get());
  ProducerConfig pc{config.kafka_brokers, config.kafka_options, a->agent_id_,
                    config.max_message_age_ms};
  DrainOptions dopts;
  dopts.max_inflight_messages = config.max_inflight_messages;
  dopts.max_inflight_bytes = config.max_inflight_bytes;
  dopts.retry_backoff_ms = config.retry_backoff_ms;
  dopts.retry_backoff_max_ms = config.retry_backoff_max_ms;
  dopts.commit_point_interval_ms = config.commit_point_interval_ms;
  dopts.shutdown_grace_ms = config.shutdown_grace_ms;
  dopts.max_message_age_ms = config.max_message_age_ms;
  dopts.unknown_topic_checks = config.unknown_topic_checks;
  dopts.wal_reopen_interval_ms = config.wal_reopen_interval_ms;
  dopts.clock = deps.clock;
  a->drain_ = std::make_unique<DrainLoop>(
      a->wal_.get(), a->tracker_.get(), [pc] { return KafkaProducer::Create(pc); }, dopts);
  if (absl::Status s = a->drain_->Start(); !s.ok()) return s;

  DrainLoop* drain = a->drain_.get();
  a->spool_ = std::make_unique<SpoolService>(
      a->wal_.get(), RequestLimits{config.max_message_bytes, config.max_batch_messages},
      [drain] { drain->Notify(); },
      [drain, clock = deps.clock, reopen = config.wal_reopen_interval_ms](absl::StatusCode code) {
        if (code == absl::StatusCode::kUnavailable) return static_cast<int64_t>(reopen);
        // WAL full: soon if Kafka is taking messages, later if it is not.
        return clock->NowMillis() - drain->last_delivery_ms() < 5000 ? int64_t{200}
                                                                      : int64_t{2000};
      });
  a->admin_ = std::make_unique<AdminService>(a->wal_.get(), a->tracker_.get(), drain,
                                             deps.clock);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<uint64_t>(config.max_message_bytes * 2 + (64 << 20), INT32_MAX)));
  builder.RegisterService(a->spool_.get());
  builder.RegisterService(a->admin_.get());
  a->server_ = builder.BuildAndStart();
  if (!a->server_ || (port == 0 && config.listen.rfind("unix:", 0) != 0)) {
    a->drain_->Stop();
    return absl::UnavailableError("cannot listen on " + config.listen +
                                  " (address in use, or not HOST:PORT / unix:PATH)");
  }
  a->grpc_address_ = WithPort(config.listen, port);
  return a;
}

Agent::~Agent() { Shutdown(); }

void Agent::Shutdown() {
  if (server_) {
    spdlog::info("shutdown: no longer accepting Sends");
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }
  if (drain_) {
    drain_->Stop();
    drain_.reset();
  }
  wal_.reset();
}

}  // namespace kspool::agent
