#include "agent/stats/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/text_serializer.h>

#include <set>
#include <sstream>
#include <string_view>

#include "agent/drain/commit_tracker.h"
#include "agent/stats/process_stats.h"
#include "base/mutex.h"

namespace kspool::agent {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

const char* CodeName(int code) {
  static const char* kNames[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                                 "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                                 "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN";
}

MetricFamily Family(const std::string& name, const std::string& help, MetricType type) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void Add(MetricFamily* f, double value, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f->type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f->metric.push_back(std::move(m));
}

// The per-topic counters of topics the WAL no longer tracks (forgotten when idle, or
// beyond --max-tracked-topics), summed under one topic label, wal::kForgottenTopics, as
// the WAL sums them once it has folded them: the page grows with the topics tracked, not
// with every name ever sent. A topic that comes back starts its own series from 0 again
// (a counter reset to Prometheus); the sum over every label stays what it was.
using wal::kForgottenTopics;

void FoldForgottenTopics(const std::vector<std::string>& tracked_list, wal::Stats* st) {
  const std::set<std::string_view> tracked(tracked_list.begin(), tracked_list.end());
  wal::TopicStats forgotten;
  bool any = false;
  for (auto it = st->topics.begin(); it != st->topics.end();) {
    const wal::TopicStats& t = it->second;
    if (tracked.count(it->first) > 0 || t.stored().count > 0) {
      ++it;
      continue;
    }
    any = true;
    forgotten.Add(t);  // the WAL's own sum of forgotten topics (wal::kForgottenTopics) too
    it = st->topics.erase(it);
  }
  if (any) st->topics.emplace(kForgottenTopics, std::move(forgotten));
}

// What clients hold at the front door.
void AddFrontDoor(const MetricSources& s, std::vector<MetricFamily>* out) {
  auto conns = Family("kspool_grpc_connections", "Open gRPC client connections",
                      MetricType::Gauge);
  auto conns_max = Family("kspool_grpc_connections_max",
                          "Most open gRPC client connections (--max-connections, lowered to "
                          "fit the open-files limit)",
                          MetricType::Gauge);
  auto mem = Family("kspool_receive_memory_bytes",
                    "Bytes of requests clients have sent in part (as the front door meters "
                    "them) and of requests decoded and not yet appended",
                    MetricType::Gauge);
  auto mem_max = Family("kspool_receive_memory_limit_bytes",
                        "Bound on memory for requests being received and appended "
                        "(--max-receive-memory)",
                        MetricType::Gauge);
  Add(&conns, s.grpc_connections ? s.grpc_connections() : 0);
  Add(&conns_max, s.grpc_connections_max);
  Add(&mem, s.receive_memory_used ? s.receive_memory_used() : 0);
  Add(&mem_max, s.receive_memory_limit);
  for (auto* f : {&conns, &conns_max, &mem, &mem_max}) out->push_back(std::move(*f));
}

// The delivery index (--delivery-retention*) and who waits on it.
void AddDeliveries(const MetricSources& s, const wal::Stats& st, std::vector<MetricFamily>* out) {
  auto messages = Family("kspool_delivery_index_messages",
                         "Outcomes kept in the delivery index (GetDeliveryStatus, WatchDeliveries)",
                         MetricType::Gauge);
  auto bytes = Family("kspool_delivery_index_bytes", "Stored bytes of the delivery index",
                      MetricType::Gauge);
  auto oldest = Family("kspool_delivery_oldest_sequence",
                       "Oldest sequence number whose outcome may still be known: below it, "
                       "statuses are UNKNOWN and WatchDeliveries is OUT_OF_RANGE",
                       MetricType::Gauge);
  auto retention = Family("kspool_delivery_retention_seconds",
                          "How long outcomes are kept (--delivery-retention)", MetricType::Gauge);
  auto retention_bytes = Family("kspool_delivery_retention_bytes",
                                "Most stored bytes of outcomes kept (--delivery-retention-bytes)",
                                MetricType::Gauge);
  auto waiting = Family("kspool_delivery_waiting_sends",
                        "Sends with WAIT_FOR_KAFKA waiting for their outcomes", MetricType::Gauge);
  auto waiting_mem = Family("kspool_waiting_memory_bytes",
                            "Bytes held for WAIT_FOR_KAFKA Sends waiting for their outcomes",
                            MetricType::Gauge);
  auto waiting_mem_max = Family("kspool_waiting_memory_limit_bytes",
                                "Bound on memory for waiting WAIT_FOR_KAFKA Sends "
                                "(--max-waiting-memory; 0 = none)",
                                MetricType::Gauge);
  auto watchers = Family("kspool_delivery_watchers", "Open WatchDeliveries streams",
                         MetricType::Gauge);
  Add(&messages, st.delivery_index.count);
  Add(&bytes, st.delivery_index.bytes);
  Add(&oldest, st.delivery_floor_seq);
  Add(&retention, s.delivery_retention_ms / 1000.0);
  Add(&retention_bytes, s.delivery_retention_bytes);
  Add(&waiting, s.waiting_sends ? s.waiting_sends() : 0);
  Add(&watchers, s.delivery_watchers ? s.delivery_watchers() : 0);
  Add(&waiting_mem, s.waiting_memory_used ? s.waiting_memory_used() : 0);
  Add(&waiting_mem_max, s.waiting_memory_limit);
  for (auto* f : {&messages, &bytes, &oldest, &retention, &retention_bytes, &waiting, &watchers,
                  &waiting_mem, &waiting_mem_max}) {
    out->push_back(std::move(*f));
  }
}

// The bounds on what clients, time and a stuck topic can make the WAL hold
// (wal/options.h), read from the WAL's stats.
void AddBounds(const wal::Stats& st, std::vector<MetricFamily>* out) {
  auto queued = Family("kspool_wal_append_queue_bytes",
                       "Bytes of Sends waiting for the WAL's disk (--max-append-queue-bytes)",
                       MetricType::Gauge);
  Add(&queued, st.queued_bytes);
  auto refused = Family("kspool_wal_appends_refused_total",
                        "Appends refused since start, by reason: wal_full, topic_full, "
                        "append_queue_full (RESOURCE_EXHAUSTED), no_reserve (UNAVAILABLE)",
                        MetricType::Counter);
  for (const char* reason : {"wal_full", "topic_full", "append_queue_full", "no_reserve"}) {
    auto it = st.refused.find(reason);
    Add(&refused, it == st.refused.end() ? 0 : it->second, {{"reason", reason}});
  }
  auto reserve = Family("kspool_wal_reserve_bytes",
                        "Bytes of the reserve file kept on the WAL's volume (--wal-reserve-bytes); "
                        "0 while it is missing",
                        MetricType::Gauge);
  Add(&reserve, st.reserve_bytes);
  auto missing = Family("kspool_wal_reserve_missing",
                        "1 while the WAL's reserve is missing (the volume is short of space): "
                        "Sends are refused with UNAVAILABLE (no_reserve)",
                        MetricType::Gauge);
  Add(&missing, st.reserve_missing ? 1 : 0);
  auto topic_full = Family("kspool_wal_topic_full_refusals_total",
                           "Appends refused because their topic had --topic-max-bytes in the WAL "
                           "since start, by (tracked) topic",
                           MetricType::Counter);
  for (const auto& [topic, n] : st.topic_full_refused) Add(&topic_full, n, {{"topic", topic}});
  auto topic_bytes = Family("kspool_wal_topic_bytes",
                            "Bytes of a topic's messages in the WAL (topics with any)",
                            MetricType::Gauge);
  auto dropped = Family("kspool_dead_letters_dropped_total",
                        "Dead letters removed beyond --dead-letter-max-bytes (limit=size) or "
                        "--dead-letter-max-age (limit=age); still counted as discarded (persisted)",
                        MetricType::Counter);
  for (const auto& [topic, t] : st.topics) {
    if (const uint64_t b = t.pending().bytes; b > 0) Add(&topic_bytes, b, {{"topic", topic}});
    for (const auto& [limit, c] : t.dead_dropped) {
      Add(&dropped, c.count, {{"topic", topic}, {"limit", limit}});
    }
  }
  auto dead = Family("kspool_dead_letters", "Discarded messages kept in the dead-letter store",
                     MetricType::Gauge);
  Add(&dead, st.dead_letters.count);
  auto dead_bytes = Family("kspool_dead_letter_bytes",
                           "Bytes of the dead letters; they count against the WAL capacity",
                           MetricType::Gauge);
  Add(&dead_bytes, st.dead_letters.bytes);
  auto buckets = Family("kspool_report_buckets",
                        "Time buckets of the discard report's after-commit-point table",
                        MetricType::Gauge);
  Add(&buckets, st.report_buckets);
  auto coarsened = Family("kspool_report_coarsenings_total",
                          "Times that table reached its bound and was merged, since start",
                          MetricType::Counter);
  Add(&coarsened, st.report_coarsenings);
  auto tracked = Family("kspool_tracked_topics",
                        "Topics whose commit points are tracked (--topic-idle-forget)",
                        MetricType::Gauge);
  Add(&tracked, st.tracked_topics);
  auto forgotten = Family("kspool_topics_forgotten_total",
                          "Idle topics no longer tracked, since start", MetricType::Counter);
  Add(&forgotten, st.topics_forgotten);
  auto tallies = Family("kspool_delivery_tallies_restarted_total",
                        "Delivery tallies (the audit's, per partition) whose stored bytes did not "
                        "parse and started again from 0, since start",
                        MetricType::Counter);
  Add(&tallies, st.tallies_restarted);
  for (auto* f : {&queued, &refused, &reserve, &missing, &topic_full, &topic_bytes, &dropped, &dead,
                  &dead_bytes, &buckets, &coarsened, &tracked, &forgotten, &tallies}) {
    out->push_back(std::move(*f));
  }
}

// The standard process metrics, named as the Prometheus client libraries name them (no
// kspool_ prefix, so dashboards made for any process work). Read at scrape time; a
// /proc read that fails leaves them out of that scrape.
void AddProcess(std::vector<MetricFamily>* out) {
  absl::StatusOr<ProcessStats> p = ReadProcessStats();
  if (!p.ok()) return;
  auto cpu = Family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds",
                    MetricType::Counter);
  auto rss =
      Family("process_resident_memory_bytes", "Resident memory size in bytes", MetricType::Gauge);
  auto fds = Family("process_open_fds", "Number of open file descriptors", MetricType::Gauge);
  auto max_fds =
      Family("process_max_fds", "Maximum number of open file descriptors", MetricType::Gauge);
  auto start = Family("process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds", MetricType::Gauge);
  Add(&cpu, p->cpu_seconds);
  Add(&rss, static_cast<double>(p->resident_bytes));
  Add(&fds, static_cast<double>(p->open_fds));
  Add(&max_fds, static_cast<double>(p->max_fds));
  Add(&start, p->start_time_seconds);
  for (auto* f : {&cpu, &rss, &fds, &max_fds, &start}) out->push_back(std::move(*f));
}

// State read from the WAL, the commit tracker and the drain loop at scrape time.
class StateCollector : public prometheus::Collectable {
 public:
  void Set(MetricSources s) {
    MutexLock l(&mu_);
    sources_ = std::move(s);
  }

  std::vector<MetricFamily> Collect() const override {
    MetricSources s;
    {
      MutexLock l(&mu_);
      s = sources_;
    }
    if (!s.wal) return {};
    const double now = s.clock->NowMillis() / 1000.0;
    wal::Stats st = s.wal->GetStats();
    FoldForgottenTopics(s.wal->TrackedTopics(), &st);
    wal::CommitPoints cp = s.tracker ? s.tracker->Current() : s.wal->SavedCommitPoints();

    auto point = Family("kspool_commit_point_timestamp_seconds",
                        "Every message received at or before this time (Unix seconds) has been "
                        "delivered or discarded and counted; global and per topic",
                        MetricType::Gauge);
    auto lag = Family("kspool_commit_lag_seconds", "Now minus the commit point", MetricType::Gauge);
    Add(&point, cp.global_ms / 1000.0);
    Add(&lag, now - cp.global_ms / 1000.0);
    for (const auto& [topic, ms] : cp.topics_ms) {
      Add(&point, ms / 1000.0, {{"topic", topic}});
      Add(&lag, now - ms / 1000.0, {{"topic", topic}});
    }
    auto age = Family("kspool_oldest_entry_age_seconds",
                      "Age of the oldest message still in the WAL (0 when empty)", MetricType::Gauge);
    Add(&age, st.entries ? std::max(0.0, now - (cp.global_ms + 1) / 1000.0) : 0.0);

    auto received = Family("kspool_messages_received_total",
                           "Messages accepted into the WAL (persisted across restarts)",
                           MetricType::Counter);
    auto delivered = Family("kspool_messages_delivered_total",
                            "Messages Kafka acknowledged (persisted across restarts)",
                            MetricType::Counter);
    auto discarded = Family("kspool_messages_discarded_total",
                            "Messages discarded into the dead letters, by reason (persisted)",
                            MetricType::Counter);
    for (const auto& [topic, t] : st.topics) {
      Add(&received, t.accepted.count, {{"topic", topic}});
      Add(&delivered, t.delivered.count, {{"topic", topic}});
      for (const auto& [reason, c] : t.discarded) {
        Add(&discarded, c.count, {{"topic", topic}, {"reason", reason}});
      }
    }
    auto entries = Family("kspool_wal_entries", "Messages in the WAL", MetricType::Gauge);
    auto bytes = Family("kspool_wal_bytes", "Bytes of the messages in the WAL", MetricType::Gauge);
    auto cap = Family("kspool_wal_capacity_bytes", "WAL capacity (--wal-max-bytes)", MetricType::Gauge);
    auto held = Family("kspool_wal_held_bytes",
                       "Bytes of settled messages still stored in part-settled records (counted "
                       "with kspool_wal_bytes against --wal-max-bytes)",
                       MetricType::Gauge);
    auto fsyncs = Family("kspool_wal_fsyncs_total", "Synced WAL writes (appends, settles, commit points, admin)", MetricType::Counter);
    auto healthy = Family("kspool_wal_healthy", "1 while the WAL accepts writes, 0 after an I/O error",
                          MetricType::Gauge);
    Add(&entries, st.entries);
    Add(&bytes, st.bytes);
    Add(&cap, st.capacity_bytes);
    Add(&held, st.held_bytes);
    Add(&fsyncs, st.fsyncs);
    Add(&healthy, s.wal->health().ok() ? 1 : 0);
    auto inflight = Family("kspool_kafka_inflight_messages",
                           "Messages read from the WAL and not yet settled", MetricType::Gauge);
    Add(&inflight, s.inflight ? s.inflight() : 0);
    auto up = Family("kspool_kafka_brokers_up",
                     "Kafka brokers librdkafka reports connected (state UP) in its latest "
                     "statistics (every statistics.interval.ms); 0 until the first after start",
                     MetricType::Gauge);
    Add(&up, s.brokers_up ? std::max(0, s.brokers_up()) : 0);
    auto stuck = Family("kspool_topic_stuck_seconds",
                        "How long a topic has had entries to send and no delivery (only topics "
                        "stuck for longer than the drain's stuck threshold appear)",
                        MetricType::Gauge);
    auto leaderless = Family("kspool_partition_leaderless",
                             "1 for each partition of a stuck topic that has no leader",
                             MetricType::Gauge);
    if (s.stuck) {
      for (const StuckTopic& t : s.stuck()) {
        Add(&stuck, t.stuck_seconds, {{"topic", t.topic}});
        for (int32_t p : t.leaderless_partitions) {
          Add(&leaderless, 1, {{"topic", t.topic}, {"partition", std::to_string(p)}});
        }
      }
    }
    std::vector<MetricFamily> out = {point,   lag,      age,      received, delivered,
                                     discarded, entries, bytes,   cap,      held,
                                     fsyncs,  healthy,  inflight, up,       stuck,
                                     leaderless};
    AddBounds(st, &out);
    AddDeliveries(s, st, &out);
    AddFrontDoor(s, &out);
    return out;
  }

 private:
  mutable Mutex mu_;
  MetricSources sources_ ABSL_GUARDED_BY(mu_);
};

prometheus::Histogram::BucketBoundaries SecondsBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}

}  // namespace

Metrics::Metrics(const std::string& version)
    : registry_(std::make_shared<prometheus::Registry>()),
      fsync_seconds_(prometheus::BuildHistogram()
                         .Name("kspool_wal_fsync_duration_seconds")
                         .Help("Duration of one synced WAL group commit")
                         .Register(*registry_)),
      group_commit_messages_(prometheus::BuildHistogram()
                                 .Name("kspool_wal_group_commit_messages")
                                 .Help("Messages written by one synced group commit")
                                 .Register(*registry_)),
      send_seconds_(prometheus::BuildHistogram()
                        .Name("kspool_send_duration_seconds")
                        .Help("Send RPC duration, by gRPC status code")
                        .Register(*registry_)),
      send_rejected_(prometheus::BuildCounter()
                         .Name("kspool_send_rejected_total")
                         .Help("Send RPCs answered with an error, by gRPC status code")
                         .Register(*registry_)),
      produce_errors_(prometheus::BuildCounter()
                          .Name("kspool_kafka_produce_errors_total")
                          .Help("Failed deliveries reported by librdkafka, by error")
                          .Register(*registry_)),
      redelivered_(prometheus::BuildCounter()
                       .Name("kspool_messages_redelivered_total")
                       .Help("Messages this agent process handed to Kafka again after it had "
                             "handed them over before (a failed or timed-out delivery, a "
                             "replaced producer): each may be a duplicate in Kafka. Messages an "
                             "earlier run left in the WAL count only from their second produce "
                             "in this run (whether that run produced them is not recorded)")
                       .Register(*registry_)),
      heartbeats_(prometheus::BuildCounter()
                      .Name("kspool_heartbeats_sent_total")
                      .Help("Heartbeat records appended, by topic")
                      .Register(*registry_)),
      heartbeat_failures_(prometheus::BuildCounter()
                              .Name("kspool_heartbeat_failures_total")
                              .Help("Heartbeat rounds skipped for a topic (no metadata, WAL "
                                    "full or unavailable)")
                              .Register(*registry_)),
      wal_reopens_(prometheus::BuildCounter()
                       .Name("kspool_wal_reopens_total")
                       .Help("Times the WAL was reopened after an I/O error")
                       .Register(*registry_)),
      degraded_(prometheus::BuildCounter()
                    .Name("kspool_degraded_events_total")
                    .Help("Degraded-mode events, each also logged as a warning, by event")
                    .Register(*registry_)),
      reconcile_found_(prometheus::BuildCounter()
                           .Name("kspool_reconcile_found_total")
                           .Help("Entries found already in Kafka when reconciling after a "
                                 "restart, settled as delivered instead of produced again")
                           .Register(*registry_)),
      reconcile_bytes_(prometheus::BuildCounter()
                           .Name("kspool_reconcile_bytes_read_total")
                           .Help("Bytes read back from Kafka to reconcile after a restart")
                           .Register(*registry_)),
      reconcile_seconds_(prometheus::BuildCounter()
                             .Name("kspool_reconcile_seconds_total")
                             .Help("Seconds spent reading Kafka back to reconcile after a restart")
                             .Register(*registry_)),
      reconcile_ended_early_(prometheus::BuildCounter()
                                 .Name("kspool_reconcile_ended_early_total")
                                 .Help("Reconciliations ended before their partitions were read "
                                       "to the end (max_hold, max_bytes, time_budget, "
                                       "topic_missing, partition_missing, unreadable), by "
                                       "reason: their entries not found were produced")
                                 .Register(*registry_)),
      connections_refused_(prometheus::BuildCounter()
                               .Name("kspool_grpc_connections_refused_total")
                               .Help("gRPC client connections the agent closed at once "
                                     "(connection_limit, out_of_descriptors, "
                                     "unix_peer_slots) or shut down "
                                     "for holding too much in unfinished requests "
                                     "(receive_memory), by reason")
                               .Register(*registry_)),
      http_dropped_(prometheus::BuildCounter()
                        .Name("kspool_http_connections_dropped_total")
                        .Help("HTTP connections closed to keep serving, by reason: head_timeout, "
                              "head_too_large, write_timeout, evicted (connection cap), "
                              "accept_failed (no connection made)")
                        .Register(*registry_)),
      bruce_rejected_(prometheus::BuildCounter()
                          .Name("kspool_bruce_rejected_total")
                          .Help("Bruce/Dory-format input refused (never in the WAL), by reason: "
                                "malformed, unsupported_api_key, unsupported_version, bad_topic, "
                                "too_long, unclean_disconnect; the latest are in the discard "
                                "report")
                          .Register(*registry_)),
      bruce_appended_(prometheus::BuildCounter()
                          .Name("kspool_bruce_messages_total")
                          .Help("Bruce/Dory-format messages appended to the WAL (fsynced), by "
                                "transport: datagram, stream, tcp")
                          .Register(*registry_)),
      acl_denied_(prometheus::BuildCounter()
                      .Name("kspool_acl_denied_total")
                      .Help("Calls refused with PERMISSION_DENIED by the --acl rules, by "
                            "identity (one the file names, else \"other\")")
                      .Register(*registry_)),
      quota_refused_(prometheus::BuildCounter()
                         .Name("kspool_quota_refused_total")
                         .Help("Requests refused with RESOURCE_EXHAUSTED by an --acl quota, by "
                               "identity (one the file names, else \"other\")")
                         .Register(*registry_)),
      acl_rules_(prometheus::BuildGauge()
                     .Name("kspool_acl_rules")
                     .Help("Rules of the --acl file in force (absent without --acl)")
                     .Register(*registry_)),
      send_ok_seconds_(send_seconds_.Add({{"code", "OK"}}, SecondsBuckets())),
      fsync_seconds_series_(fsync_seconds_.Add({}, SecondsBuckets())),
      group_commit_messages_series_(group_commit_messages_.Add(
          {}, prometheus::Histogram::BucketBoundaries{1, 4, 16, 64, 256, 1024, 4096, 16384})),
      state_(std::make_shared<StateCollector>()) {
  prometheus::BuildGauge()
      .Name("kspool_build_info")
      .Help("kspool build; the value is always 1")
      .Register(*registry_)
      .Add({{"version", version}})
      .Set(1);
  wal_reopens_.Add({});
  reconcile_found_.Add({});
  reconcile_bytes_.Add({});
  reconcile_seconds_.Add({});
  for (const char* reason :
       {"connection_limit", "out_of_descriptors", "receive_memory", "unix_peer_slots"}) {
    connections_refused_.Add({{"reason", reason}});
  }
  registry_->Collect();  // validates the families once
}

void Metrics::SetSources(MetricSources sources) {
  std::static_pointer_cast<StateCollector>(state_)->Set(std::move(sources));
}

void Metrics::ObserveGroupCommit(size_t messages, double seconds) {
  fsync_seconds_series_.Observe(seconds);
  group_commit_messages_series_.Observe(static_cast<double>(messages));
}

void Metrics::ObserveSend(int code, double seconds) {
  if (code == 0) {
    send_ok_seconds_.Observe(seconds);
  } else {
    send_seconds_.Add({{"code", CodeName(code)}}, SecondsBuckets()).Observe(seconds);
  }
}

void Metrics::SendRejected(int code) { send_rejected_.Add({{"code", CodeName(code)}}).Increment(); }

void Metrics::ProduceError(const std::string& error) {
  produce_errors_.Add({{"error", error}}).Increment();
}

void Metrics::Redelivered(const std::string& topic) { redelivered_.Add({{"topic", topic}}).Increment(); }

void Metrics::HeartbeatSent(const std::string& topic, uint64_t n) {
  heartbeats_.Add({{"topic", topic}}).Increment(static_cast<double>(n));
}

void Metrics::HeartbeatFailed(const std::string& topic) {
  heartbeat_failures_.Add({{"topic", topic}}).Increment();
}

void Metrics::WalReopened() { wal_reopens_.Add({}).Increment(); }

void Metrics::ConnectionRefused(std::string_view reason) {
  connections_refused_.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::Degraded(const std::string& event) { degraded_.Add({{"event", event}}).Increment(); }

void Metrics::ReconcileFound(uint64_t messages) {
  reconcile_found_.Add({}).Increment(static_cast<double>(messages));
}

void Metrics::ReconcileRead(uint64_t bytes, double seconds) {
  reconcile_bytes_.Add({}).Increment(static_cast<double>(bytes));
  reconcile_seconds_.Add({}).Increment(seconds);
}

void Metrics::ReconcileEndedEarly(const std::string& reason) {
  reconcile_ended_early_.Add({{"reason", reason}}).Increment();
}

void Metrics::HttpDropped(std::string_view reason) {
  http_dropped_.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::InitBruce() {
  for (const char* reason : {"malformed", "unsupported_api_key", "unsupported_version",
                             "bad_topic", "too_long", "unclean_disconnect"}) {
    bruce_rejected_.Add({{"reason", reason}});
  }
  for (const char* transport : {"datagram", "stream", "tcp"}) {
    bruce_appended_.Add({{"transport", transport}});
  }
}

void Metrics::BruceRejected(std::string_view reason) {
  bruce_rejected_.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::BruceAppended(std::string_view transport, uint64_t n) {
  bruce_appended_.Add({{"transport", std::string(transport)}}).Increment(static_cast<double>(n));
}

void Metrics::AclDenied(const std::string& identity) {
  acl_denied_.Add({{"identity", identity}}).Increment();
}

void Metrics::QuotaRefused(const std::string& identity) {
  quota_refused_.Add({{"identity", identity}}).Increment();
}

void Metrics::AclRulesLoaded(size_t rules) { acl_rules_.Add({}).Set(static_cast<double>(rules)); }

std::string Metrics::Serialize() const {
  std::vector<MetricFamily> families = registry_->Collect();
  std::vector<MetricFamily> state = state_->Collect();
  families.insert(families.end(), state.begin(), state.end());
  AddProcess(&families);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace kspool::agent
