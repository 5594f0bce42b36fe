#include "agent/app/agent.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

#include <filesystem>

#include "agent/delivery/delivery_feed.h"
#include "agent/delivery/delivery_waiters.h"
#include "agent/drain/outcome_listener.h"
#include "agent/net/fd_limits.h"
#include "base/log_rate_limiter.h"
#include "agent/security/tls_credentials.h"
#include "wal/open_reserve.h"

namespace kspool::agent {
namespace {

// The drain's outcomes, for delivery confirmation: settled ones answer the Sends waiting
// for Kafka (the delivery index holds them, so GetDeliveryStatus agrees) and wake the
// watchers. Those of a failed settle (a WAL write error) answer the Sends too, as Kafka
// acknowledged them, rather than leave them waiting for a WAL that may not reopen.
class DeliveryListener final : public OutcomeListener {
 public:
  DeliveryListener(DeliveryWaiters* waiters, DeliveryFeed* feed) : waiters_(waiters), feed_(feed) {}
  void Settled(const std::vector<wal::Outcome>& outcomes) override {
    waiters_->Resolve(outcomes);
    feed_->Notify();
  }
  void NotSettled(const std::vector<wal::Outcome>& outcomes, const absl::Status&) override {
    waiters_->Resolve(outcomes);
  }

 private:
  DeliveryWaiters* const waiters_;
  DeliveryFeed* const feed_;
};

// Half of the file system that holds (or will hold) `dir`: room for RocksDB's own
// overhead (compaction, tombstones) and for whatever else shares the volume. 0 (no
// limit) when there is no such file system; opening the WAL then says what is wrong.
// No std::filesystem call here may throw: error_code overloads only.
uint64_t DefaultWalCapacity(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) return 0;
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) {
    p = p.parent_path();
  }
  struct statvfs st;
  if (statvfs(p.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.f_blocks) * st.f_frsize / 2;
}

// RocksDB's own log lines, into the agent's log rather than files on the WAL's volume
// (wal/info_log.h). Its info lines (an options dump at every open, flushes, compactions)
// are debug here; warnings and errors, which a full disk repeats at every reopen, are
// rate-limited.
void LogRocksDb(wal::InfoLogLevel level, std::string_view message) {
  if (level < wal::InfoLogLevel::kWarning) {
    spdlog::debug("rocksdb: {}", message);
    return;
  }
  static LogRateLimiter* limiter = new LogRateLimiter(/*burst=*/20, /*window_ms=*/10'000);
  uint64_t suppressed = 0;
  if (!limiter->Admit(SystemClock::Default()->MonotonicMillis(), &suppressed)) return;
  const spdlog::level::level_enum l =
      level == wal::InfoLogLevel::kWarning ? spdlog::level::warn : spdlog::level::err;
  if (suppressed > 0) {
    spdlog::log(l, "rocksdb: {} ({} more RocksDB warnings and errors suppressed)", message,
                suppressed);
  } else {
    spdlog::log(l, "rocksdb: {}", message);
  }
}

// The WAL's options as configured, with the seams filled in and what depends on the
// capacity resolved: a capacity of 0 is half of the file system, and the per-topic and
// dead-letter sizes may be a share of the capacity.
wal::Options WalOptionsFrom(const Config& c, const AgentDeps& deps, Metrics* metrics) {
  wal::Options wo = c.wal;
  wo.env = deps.env;
  wo.clock = deps.clock;
  if (wo.max_bytes == 0) wo.max_bytes = DefaultWalCapacity(wo.dir);
  wo.max_topic_bytes = c.topic_max_bytes.Of(wo.max_bytes);
  wo.max_dead_letter_bytes = c.dead_letter_max_bytes.Of(wo.max_bytes);
  wo.on_group_commit = [metrics](size_t n, double s) { metrics->ObserveGroupCommit(n, s); };
  wo.info_log = LogRocksDb;
  return wo;
}

// --max-receive-memory is split in two halves. One is for requests gRPC is still
// receiving: gRPC holds up to about twice the bytes it has received, in read buffers,
// so the ReceptionMeter's limit is a quarter. The other is for requests received in
// full until the WAL has them: the received bytes and their decoded copy (the encoded
// batch in the WAL's queue is bounded by --max-append-queue-bytes), so again a quarter
// for the RequestMemoryBudget, which charges the received size.
uint64_t DecodedRequestBudget(const Config& config) { return config.max_receive_memory / 4; }
uint64_t ReceptionLimit(const Config& config) { return config.max_receive_memory / 4; }

// gRPC's share of the front door's bounds: streams per connection, idle connections,
// the largest request. No gRPC ResourceQuota: it did not bound memory (docs/OPERATIONS.md, "The
// front door"; the ReceptionMeter does) and it raised latency (T2 open-loop p50 from
// 1.0 to 1.4 ms).
void ConfigureFrontDoor(const Config& config, grpc::ServerBuilder* builder) {
  // No request larger than the budget for decoded requests: it could never be taken.
  builder->SetMaxReceiveMessageSize(static_cast<int>(std::min<uint64_t>(
      {config.limits.max_message_bytes * 2 + (64 << 20), DecodedRequestBudget(config),
       INT32_MAX})));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                              static_cast<int>(config.max_streams_per_connection));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                              static_cast<int>(config.idle_timeout_ms));
  // A connection that never completes its HTTP/2 handshake is closed after this.
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                              static_cast<int>(std::min<uint64_t>(config.idle_timeout_ms, 10'000)));
  // Keepalive pings find peers that vanished without closing (a dead host, a dropped NAT
  // entry), so their connections do not count against the limit forever.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> Agent::Start(const Config& config, AgentDeps deps) {
  std::unique_ptr<Agent> a(new Agent());
  a->config_ = config;
  a->started_mono_ms_ = deps.clock->MonotonicMillis();
  a->metrics_ = std::make_unique<Metrics>(KSPOOL_VERSION);
  Metrics* metrics = a->metrics_.get();

  wal::Options wo = WalOptionsFrom(config, deps, metrics);
  absl::StatusOr<uint64_t> reserve = wal::ResolveReserveBytesFor(wo.dir, wo.reserve_bytes);
  if (!reserve.ok()) return reserve.status();
  wo.reserve_bytes = *reserve;
  absl::StatusOr<std::unique_ptr<wal::Wal>> wal = wal::Wal::Open(wo);
  if (!wal.ok()) return wal.status();
  a->wal_ = std::move(wal).value();
  a->agent_id_ = a->wal_->agent_id();
  wal::Stats stats = a->wal_->GetStats();
  spdlog::info("wal: opened {} (agent id {}): {} entries, {} bytes pending of {} capacity, "
               "next seq {}", wo.dir, a->agent_id_, stats.entries, stats.bytes,
               wo.max_bytes, stats.next_seq);
  if (stats.reserve_missing) {
    spdlog::warn("wal: opened without its reserve of {} bytes (the volume of {} was too full "
                 "to keep or make it): Sends are refused with UNAVAILABLE (no_reserve) until "
                 "the volume has twice that free", wo.reserve_bytes, wo.dir);
  }
  spdlog::info("wal: bounds: {} dead letters ({} bytes, limit {} bytes, {} ms), per topic {} "
               "bytes, append queue {} bytes (0 = none)",
               stats.dead_letters.count, stats.dead_letters.bytes, wo.max_dead_letter_bytes,
               wo.max_dead_letter_age_ms, wo.max_topic_bytes, wo.max_queue_bytes);

  a->tracker_ = std::make_unique<CommitTracker>(a->wal_.get());
  absl::StatusOr<std::unique_ptr<KafkaMetadata>> md =
      KafkaMetadata::Create(config.kafka_brokers, config.kafka_options,
                            config.wal.max_tracked_topics);
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
                    config.drain.max_message_age_ms, {}};
  // The producer is made by the drain loop itself, after drain_ is set, and destroyed
  // by it before it stops: drain_ is valid whenever this runs.
  pc.on_reports = [agent = a.get()] { agent->drain_->Notify(); };
  a->waiters_ = std::make_unique<DeliveryWaiters>(deps.clock);
  a->waiters_->StartExpiry();
  a->feed_ = std::make_unique<DeliveryFeed>(a->wal_.get());
  a->feed_->Start();
  DrainOptions dopt = config.drain;
  // The Kafka clients keep every topic name they were given: they are bounded by what the
  // agent tracks (drain_producer_life.cc, kafka_metadata.h).
  dopt.producer_max_topics = config.wal.max_tracked_topics;
  dopt.clock = deps.clock;
  dopt.metrics = metrics;
  dopt.partitions = a->partitions_.get();
  a->outcome_listener_ = std::make_unique<DeliveryListener>(a->waiters_.get(), a->feed_.get());
  dopt.outcomes = a->outcome_listener_.get();
  if (dopt.reconcile_max_hold_ms > 0) {
    // Entries in the WAL at start may be in Kafka already (acknowledged, not settled), and
    // so may attempts whose reports a replaced producer took along or that came back
    // possibly persisted: their partitions are read back before they are produced again
    // (agent/drain/reconciler.h). Its threads start with the first request.
    ReconcilerOptions ro = config.reconcile;
    ro.max_hold_ms = static_cast<int64_t>(dopt.reconcile_max_hold_ms);
    a->reconciler_ = std::make_unique<KafkaReconciler>(
        [brokers = config.kafka_brokers, options = config.kafka_options] {
          return PartitionScanner::Create(brokers, options);
        },
        a->wal_.get(), a->partitions_.get(), a->agent_id_, ro, deps.clock,
        [agent = a.get()] { agent->drain_->Notify(); });
    dopt.reconciler = a->reconciler_.get();
  }
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
  a->heartbeater_ = std::make_unique<Heartbeater>(
      a->wal_.get(), a->tracker_.get(), a->metadata_.get(), metrics, [drain] { drain->Notify(); },
      deps.clock, config.heartbeat);
  if (absl::Status s = a->StartServers(config, deps.clock); !s.ok()) return s;
  a->heartbeater_->Start();
  a->maintenance_ = std::make_unique<WalMaintenance>(a->wal_.get(), metrics);
  a->maintenance_->Start();
  return a;
}

absl::Status Agent::StartServers(const Config& config, Clock* clock) {
  DrainLoop* drain = drain_.get();
  auto retry_after_ms = [drain, clock,
                         reopen = config.drain.wal_reopen_interval_ms](absl::StatusCode code) {
    if (code == absl::StatusCode::kUnavailable) return static_cast<int64_t>(reopen);
    // WAL full: soon if Kafka is taking messages, later if it is not.
    const int64_t last = drain->last_delivery_mono_ms();
    return last != 0 && clock->MonotonicMillis() - last < 5000 ? int64_t{200} : int64_t{2000};
  };
  spool_ = std::make_unique<SpoolService>(
      wal_.get(), wal_.get(), config.limits, [drain] { drain->Notify(); }, retry_after_ms,
      metrics_.get(), metadata_.get(), clock, DecodedRequestBudget(config), waiters_.get(),
      feed_.get(), config.max_waiting_memory);
  admin_ = std::make_unique<AdminService>(wal_.get(), tracker_.get(), drain, clock);
  if (absl::Status s = StartAccessControl(config, clock); !s.ok()) return s;
  if (absl::Status s = StartBruce(config, clock, retry_after_ms); !s.ok()) return s;

  // Bruce stream/TCP clients have their own cap; their descriptors are kept out of what
  // gRPC clients may take, like the HTTP server's.
  const bool bruce_streams = !config.bruce_stream_socket.empty() || !config.bruce_tcp.empty();
  const FdBudget fds = RaiseFdLimitAndBudget(
      config.max_connections, HttpLimits{}.max_connections +
                                  (bruce_streams ? BruceListenerOptions{}.max_connections : 0));
  spdlog::info("{}", fds.Describe(config.max_connections));
  Metrics* metrics = metrics_.get();
  meter_ = std::make_unique<ReceptionMeter>(
      ReceptionLimit(config), [metrics, log = std::make_shared<LogRateLimiter>(1, 10'000),
                               clock](uint64_t debt) {
        metrics->ConnectionRefused("receive_memory");
        uint64_t suppressed = 0;
        if (log->Admit(clock->MonotonicMillis(), &suppressed)) {
          spdlog::warn("front door: shut down a gRPC connection holding {} bytes of unfinished "
                       "requests (over a quarter of --max-receive-memory; {} more since the "
                       "last warning)",
                       debt, suppressed);
        }
      },
      clock);
  auto credit = [m = meter_.get()](const std::string& peer, size_t bytes) {
    m->Completed(peer, bytes);
  };
  spool_->set_on_received(credit);
  admin_->set_on_received(credit);
  GrpcListenerOptions lo;
  lo.address = config.listen;
  lo.max_connections = fds.grpc_connections;
  lo.on_refused = [metrics](std::string_view reason) { metrics->ConnectionRefused(reason); };
  lo.meter = meter_.get();
  lo.socket_file = config.listen_socket;
  absl::StatusOr<std::unique_ptr<GrpcListener>> listener = GrpcListener::Listen(std::move(lo));
  if (!listener.ok()) return listener.status();
  listener_ = std::move(listener).value();
  grpc_address_ = listener_->address();

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ConfigureFrontDoor(config, &builder);
  std::shared_ptr<grpc::ServerCredentials> credentials;  // null: plaintext
  const TlsFiles tls{config.tls_cert, config.tls_key, config.tls_client_ca};
  if (tls.enabled()) {
    absl::StatusOr<std::unique_ptr<TlsReloader>> reloader =
        TlsReloader::Start(tls, [metrics] { metrics->Degraded("tls_reload_failed"); });
    if (!reloader.ok()) return reloader.status();
    tls_ = std::move(reloader).value();
    credentials = tls_->credentials();
    spdlog::info("gRPC listener: TLS with {}{}", tls.cert,
                 tls.client_ca.empty() ? "" : ", client certificates required (mTLS)");
  } else if (!IsLoopbackAddress(grpc_address_)) {
    spdlog::warn("gRPC listener on {} is reachable from other hosts without TLS: anyone who "
                 "can connect can send to any topic (set --tls-cert and --tls-key)",
                 grpc_address_);
  }
  if (!access_ && !IsLoopbackAddress(grpc_address_)) {
    spdlog::warn(
        "gRPC listener on {} is reachable from other hosts without --acl: every "
        "caller may send to any topic and call the admin service",
        grpc_address_);
  }
  listener_->AddAcceptors(&builder, credentials);
  builder.RegisterService(spool_.get());
  builder.RegisterService(admin_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return absl::InternalError("the gRPC server did not start");
  listener_->Start();

  MetricSources sources;
  sources.wal = wal_.get();
  sources.tracker = tracker_.get();
  sources.inflight = [drain] { return drain->inflight(); };
  sources.brokers_up = [drain] { return drain->brokers_up(); };
  sources.clock = clock;
  sources.stuck = [drain] { return drain->Stuck(); };
  sources.grpc_connections = [l = listener_.get()] { return l->connections(); };
  sources.grpc_connections_max = listener_->max_connections();
  sources.receive_memory_limit = config.max_receive_memory;
  sources.delivery_retention_ms = config.wal.delivery_retention_ms;
  sources.delivery_retention_bytes = config.wal.delivery_retention_bytes;
  sources.waiting_sends = [w = waiters_.get()] { return w->waiting(); };
  sources.waiting_memory_used = [spool = spool_.get()] { return spool->waiting_memory().in_use(); };
  sources.waiting_memory_limit = config.max_waiting_memory;
  sources.delivery_watchers = [f = feed_.get()] { return f->watchers(); };
  sources.receive_memory_used = [m = meter_.get(), spool = spool_.get()] {
    return m->debt() + spool->receive_memory().in_use();
  };
  metrics->SetSources(std::move(sources));

  AdminService* admin = admin_.get();
  HttpHandlers handlers;
  handlers.metrics = [m = metrics_.get()] { return m->Serialize(); };
  handlers.discards_json = [this, admin] { return DiscardsJson(admin); };
  handlers.status_json = [this, clock] { return StatusJson(clock); };
  handlers.health = [w = wal_.get()] { return w->health(); };
  handlers.on_drop = [m = metrics_.get()](std::string_view reason) { m->HttpDropped(reason); };
  handlers.detail_loopback_only =
      config.http_detail_from == "loopback" || !config.acl_file.empty();
  std::unique_ptr<HttpTls> http_tls;
  if (!config.metrics_tls_cert.empty()) {
    absl::StatusOr<std::unique_ptr<HttpTls>> t =
        HttpTls::Load(TlsFiles{config.metrics_tls_cert, config.metrics_tls_key, ""},
                      [metrics] { metrics->Degraded("metrics_tls_reload_failed"); });
    if (!t.ok()) return t.status();
    http_tls = std::move(t).value();
  }
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(config.metrics_listen, std::move(handlers), {}, std::move(http_tls));
  if (!http.ok()) return http.status();
  http_ = std::move(http).value();
  return absl::OkStatus();
}

absl::Status Agent::StartAccessControl(const Config& config, Clock* clock) {
  if (config.acl_file.empty()) return absl::OkStatus();
  // Taken before the read: a change in between is seen by the reloader.
  std::string seen = AclFileFingerprint(config.acl_file);
  absl::StatusOr<AclRules> rules = LoadAclFile(config.acl_file);
  if (!rules.ok()) {
    return absl::InvalidArgumentError("--acl " + std::string(rules.status().message()));
  }
  spdlog::info("access control: {} rules from {}", rules->rules().size(), config.acl_file);
  access_ = std::make_unique<AccessControl>(std::move(rules).value(), config.acl_file,
                                            metrics_.get(), clock);
  spool_->set_access_control(access_.get());
  admin_->set_access_control(access_.get());
  acl_reloader_ = std::make_unique<AclReloader>(access_.get(), std::move(seen));
  return absl::OkStatus();
}

void Agent::ReloadAcl() {
  if (!access_) {
    spdlog::info("SIGHUP: no --acl file to re-read");
    return;
  }
  (void)access_->Reload();  // a failure is logged and counted by Reload
}

absl::Status Agent::StartBruce(const Config& config, Clock* clock,
                               std::function<int64_t(absl::StatusCode)> retry_after_ms) {
  if (!config.bruce_enabled()) return absl::OkStatus();
  metrics_->InitBruce();
  bruce_rejections_ = std::make_unique<BruceRejections>(metrics_.get(), clock);
  admin_->set_bruce_rejections(bruce_rejections_.get());
  BruceIngestOptions io;
  io.limits = config.limits;
  io.on_appended = [drain = drain_.get()] { drain->Notify(); };
  io.retry_after_ms = std::move(retry_after_ms);
  io.partitions = partitions_.get();
  io.metrics = metrics_.get();
  io.clock = clock;
  bruce_ingest_ = std::make_unique<BruceIngest>(wal_.get(), bruce_rejections_.get(), io);
  BruceListenerOptions lo;
  lo.datagram_path = config.bruce_datagram_socket;
  lo.stream_path = config.bruce_stream_socket;
  lo.tcp_address = config.bruce_tcp;
  if (config.bruce_max_message_bytes > 0) {
    lo.max_datagram_bytes = lo.max_stream_bytes = config.bruce_max_message_bytes;
  }
  lo.max_buffered_bytes = std::max<size_t>(lo.max_buffered_bytes, 2 * lo.max_stream_bytes);
  lo.socket = config.bruce_socket;
  absl::StatusOr<std::unique_ptr<BruceListener>> l = BruceListener::Listen(
      std::move(lo), bruce_ingest_.get(), bruce_rejections_.get(), metrics_.get());
  if (!l.ok()) return l.status();
  bruce_listener_ = std::move(l).value();
  bruce_listener_->Start();
  spdlog::info("bruce input: datagram={} stream={} tcp={} (Bruce/Dory format)",
               config.bruce_datagram_socket.empty() ? "-" : config.bruce_datagram_socket,
               config.bruce_stream_socket.empty() ? "-" : config.bruce_stream_socket,
               bruce_listener_->tcp_address().empty() ? "-" : bruce_listener_->tcp_address());
  return absl::OkStatus();
}

Agent::~Agent() { Shutdown(); }

void Agent::Shutdown() {
  // First: threads waiting for metadata from an unreachable cluster give up now.
  if (metadata_) metadata_->Cancel();
  if (heartbeater_) heartbeater_->Stop();
  maintenance_.reset();
  // What the Bruce input has read is appended before the WAL goes.
  bruce_listener_.reset();
  bruce_ingest_.reset();
  if (listener_) listener_->Stop();
  // Calls that would wait for outcomes end now (UNAVAILABLE, their sequence numbers
  // named), so that the server's shutdown does not wait for them.
  if (waiters_) waiters_->Close();
  if (feed_) feed_->Close();
  if (server_) {
    spdlog::info("shutdown: no longer accepting Sends");
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server_.reset();
  }
  tls_.reset();  // removes the staged copies of the TLS files
  acl_reloader_.reset();
  http_.reset();
  if (drain_) {
    drain_->Stop();
    reconciler_.reset();  // tells a stopped drain nothing more; waits for a read under way
    drain_.reset();
  }
  feed_.reset();
  waiters_.reset();
  heartbeater_.reset();
  wal_.reset();
}

}  // namespace kspool::agent
