#include "agent/agent.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

#include <filesystem>

namespace kspool::agent {
namespace {

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

DrainOptions DrainOptionsFrom(const Config& c, Clock* clock, Metrics* metrics) {
  DrainOptions d;
  d.max_inflight_messages = c.max_inflight_messages;
  d.max_inflight_bytes = c.max_inflight_bytes;
  d.retry_backoff_ms = c.retry_backoff_ms;
  d.retry_backoff_max_ms = c.retry_backoff_max_ms;
  d.commit_point_interval_ms = c.commit_point_interval_ms;
  d.shutdown_grace_ms = c.shutdown_grace_ms;
  d.max_message_age_ms = c.max_message_age_ms;
  d.unknown_topic_checks = c.unknown_topic_checks;
  d.wal_reopen_interval_ms = c.wal_reopen_interval_ms;
  d.clock = clock;
  d.metrics = metrics;
  return d;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> Agent::Start(const Config& config, AgentDeps deps) {
  std::unique_ptr<Agent> a(new Agent());
  a->config_ = config;
  a->started_mono_ms_ = deps.clock->MonotonicMillis();
  a->metrics_ = std::make_unique<Metrics>(KSPOOL_VERSION);
  Metrics* metrics = a->metrics_.get();

  wal::Options wo;
  wo.dir = config.wal_dir;
  wo.env = deps.env;
  wo.clock = deps.clock;
  wo.max_bytes = config.wal_max_bytes ? config.wal_max_bytes : DefaultWalCapacity(config.wal_dir);
  wo.max_queue_bytes = config.max_append_queue_bytes;
  wo.max_topic_bytes = config.topic_max_bytes.Of(wo.max_bytes);
  wo.max_dead_letter_bytes = config.dead_letter_max_bytes.Of(wo.max_bytes);
  wo.max_dead_letter_age_ms = static_cast<int64_t>(config.dead_letter_max_age_ms);
  wo.topic_idle_forget_ms = static_cast<int64_t>(config.topic_idle_forget_ms);
  wo.max_tracked_topics = config.max_tracked_topics;
  wo.on_group_commit = [metrics](size_t n, double s) { metrics->ObserveGroupCommit(n, s); };
  absl::StatusOr<std::unique_ptr<wal::Wal>> wal = wal::Wal::Open(wo);
  if (!wal.ok()) return wal.status();
  a->wal_ = std::move(wal).value();
  a->agent_id_ = a->wal_->agent_id();
  wal::Stats stats = a->wal_->GetStats();
  spdlog::info("wal: opened {} (agent id {}): {} entries, {} bytes pending of {} capacity, "
               "next seq {}", config.wal_dir, a->agent_id_, stats.entries, stats.bytes,
               wo.max_bytes, stats.next_seq);
  spdlog::info("wal: bounds: {} dead letters ({} bytes, limit {} bytes, {} ms), per topic {} "
               "bytes, append queue {} bytes (0 = none)",
               stats.dead_letters.count, stats.dead_letters.bytes, wo.max_dead_letter_bytes,
               wo.max_dead_letter_age_ms, wo.max_topic_bytes, wo.max_queue_bytes);

  a->tracker_ = std::make_unique<CommitTracker>(a->wal_.get());
  absl::StatusOr<std::unique_ptr<KafkaMetadata>> md =
      KafkaMetadata::Create(config.kafka_brokers, config.kafka_options);
  if (!md.ok()) return md.status();
  a->metadata_ = std::move(md).value();
  PartitionCacheOptions pco;
  pco.clock = deps.clock;
  a->partitions_ = std::make_unique<PartitionCache>(
      [m = a->metadata_.get()](const std::string& topic) {
        return m->PartitionLeaders(topic, 5000);
      },
      pco);
  ProducerConfig pc{config.kafka_brokers, config.kafka_options, a->agent_id_,
                    config.max_message_age_ms, {}};
  // The producer is made by the drain loop itself, after drain_ is set, and destroyed
  // by it before it stops: drain_ is valid whenever this runs.
  pc.on_reports = [agent = a.get()] { agent->drain_->Notify(); };
  DrainOptions dopt = DrainOptionsFrom(config, deps.clock, metrics);
  dopt.partitions = a->partitions_.get();
  a->drain_ = std::make_unique<DrainLoop>(
      a->wal_.get(), a->tracker_.get(),
      [pc]() -> absl::StatusOr<std::unique_ptr<Producer>> {
        absl::StatusOr<std::unique_ptr<KafkaProducer>> p = KafkaProducer::Create(pc);
        if (!p.ok()) return p.status();
        return std::unique_ptr<Producer>(std::move(p).value());
      },
      dopt);
  if (absl::Status s = a->drain_->Start(); !s.ok()) return s;

  DrainLoop* drain = a->drain_.get();
  metrics->SetSources({a->wal_.get(), a->tracker_.get(), [drain] { return drain->inflight(); },
                       [drain] { return drain->brokers_up(); }, deps.clock,
                       [drain] { return drain->Stuck(); }});
  a->heartbeater_ = std::make_unique<Heartbeater>(
      a->wal_.get(), a->tracker_.get(), a->metadata_.get(), metrics, [drain] { drain->Notify(); },
      deps.clock, HeartbeatOptions{config.heartbeat_interval_ms, config.heartbeat_topics});
  if (absl::Status s = a->StartServers(config, deps.clock); !s.ok()) return s;
  a->heartbeater_->Start();
  a->maintenance_ = std::make_unique<WalMaintenance>(a->wal_.get(), metrics);
  a->maintenance_->Start();
  return a;
}

absl::Status Agent::StartServers(const Config& config, Clock* clock) {
  DrainLoop* drain = drain_.get();
  spool_ = std::make_unique<SpoolService>(
      wal_.get(),
      RequestLimits{config.max_message_bytes, config.max_batch_messages, config.max_headers,
                    config.max_future_timestamp_ms},
      [drain] { drain->Notify(); },
      [drain, clock, reopen = config.wal_reopen_interval_ms](absl::StatusCode code) {
        if (code == absl::StatusCode::kUnavailable) return static_cast<int64_t>(reopen);
        // WAL full: soon if Kafka is taking messages, later if it is not.
        const int64_t last = drain->last_delivery_mono_ms();
        return last != 0 && clock->MonotonicMillis() - last < 5000 ? int64_t{200}
                                                                    : int64_t{2000};
      },
      metrics_.get(), metadata_.get(), clock, /*receive_memory_bytes=*/0);
  admin_ = std::make_unique<AdminService>(wal_.get(), tracker_.get(), drain, clock);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<uint64_t>(config.max_message_bytes * 2 + (64 << 20), INT32_MAX)));
  builder.RegisterService(spool_.get());
  builder.RegisterService(admin_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || (port == 0 && config.listen.rfind("unix:", 0) != 0)) {
    return absl::UnavailableError("cannot listen on " + config.listen +
                                  " (address in use, or not HOST:PORT / unix:PATH)");
  }
  grpc_address_ = config.listen.rfind("unix:", 0) == 0
                      ? config.listen
                      : config.listen.substr(0, config.listen.rfind(':')) + ":" + std::to_string(port);

  AdminService* admin = admin_.get();
  HttpHandlers handlers;
  handlers.metrics = [m = metrics_.get()] { return m->Serialize(); };
  handlers.discards_json = [this, admin] { return DiscardsJson(admin); };
  handlers.status_json = [this, clock] { return StatusJson(clock); };
  handlers.health = [w = wal_.get()] { return w->health(); };
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(config.metrics_listen, std::move(handlers));
  if (!http.ok()) return http.status();
  http_ = std::move(http).value();
  return absl::OkStatus();
}

Agent::~Agent() { Shutdown(); }

void Agent::Shutdown() {
  if (heartbeater_) heartbeater_->Stop();
  maintenance_.reset();
  if (server_) {
    spdlog::info("shutdown: no longer accepting Sends");
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }
  http_.reset();
  if (drain_) {
    drain_->Stop();
    drain_.reset();
  }
  heartbeater_.reset();
  wal_.reset();
}

}  // namespace kspool::agent
