// kspool-bench: load generator for a running agent. Reports acknowledged and delivered
// rates, Send latency percentiles, failures by status code, the batch size the agent
// committed with, and (with --ceiling DIR) kspool's ratio to raw RocksDB synced writes
// of that batch size on the same disk, measured in the same run. --stream sends on
// SendStream instead of unary Sends; --wait-for kafka waits for (and checks) each
// message's Kafka outcome; --agent-pid adds where the agent's CPU went. For the peer
// benchmark (tools/bench-peers.sh; peer_modes.h): --tcp-lines and --bruce-tcp feed one TCP
// connection, --kafka-offsets and --kafka-wait count deliveries in Kafka, --ceiling-only
// measures the raw RocksDB ceiling alone, --grpc-ceiling gRPC's alone.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "tools/bench/bruce.h"
#include "tools/bench/ceiling.h"
#include "tools/bench/cpu.h"
#include "tools/bench/load.h"
#include "tools/bench/peer_modes.h"
#include "tools/bench/request.h"

namespace {

kspool::v1::GetWalStatsResponse Stats(kspool::v1::Admin::Stub& admin) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  kspool::v1::GetWalStatsResponse r;
  grpc::Status s = admin.GetWalStats(&ctx, {}, &r);
  if (!s.ok()) {
    std::fprintf(stderr, "kspool-bench: agent stats: %s\n", s.error_message().c_str());
    std::exit(1);
  }
  return r;
}

// --bruce-datagram: the Bruce/Dory datagram load, then, in the same run, the same
// number of clients doing single-message unary gRPC Sends for the same time.
int RunBruce(const std::string& path, kspool::bench::LoadOptions o, kspool::v1::Admin::Stub& admin,
             bool json) {
  const auto before = Stats(admin);
  const kspool::bench::BruceLoadResult b =
      kspool::bench::RunBruceDatagramLoad(path, o.clients, o.size, o.topics, o.duration_s);
  const auto after = Stats(admin);
  // What the agent appended (fsynced) and delivered during the load.
  const double durable = (after.appended_messages() - before.appended_messages()) / b.seconds;
  const double delivered = (after.delivered() - before.delivered()) / b.seconds;
  // Let the backlog of the Bruce load drain before the unary load, so that one does not
  // slow the other.
  for (int i = 0; i < 600 && Stats(admin).entries() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  o.batch = 1;
  const kspool::bench::LoadResult u = kspool::bench::RunLoad(o, nullptr);
  const double unary = u.acked / u.seconds;
  uint64_t unary_failures = 0;
  for (const auto& [_, n] : u.failures) unary_failures += n;
  nlohmann::json j = {{"mode", "bruce_datagram"},
                      {"senders", o.clients},
                      {"size", o.size},
                      {"seconds", b.seconds},
                      {"sent", b.sent},
                      {"sent_per_s", b.sent / b.seconds},
                      {"send_errors", b.errors},
                      {"durable_per_s", durable},
                      {"delivered_per_s", delivered},
                      {"backlog_after", after.entries()},
                      {"unary_clients", o.clients},
                      {"unary_acked_per_s", unary},
                      {"unary_failures", unary_failures},
                      {"ratio_to_unary", unary > 0 ? durable / unary : 0}};
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("bruce datagram  %d senders x %d B: sent %.0f msg/s, durable %.0f msg/s, "
                "delivered %.0f msg/s (backlog %llu at the end), %llu send errors\n",
                o.clients, o.size, b.sent / b.seconds, durable, delivered,
                static_cast<unsigned long long>(after.entries()),
                static_cast<unsigned long long>(b.errors));
    std::printf("unary gRPC      %d clients x 1 message per Send: %.0f msg/s (%llu failures)\n",
                o.clients, unary, static_cast<unsigned long long>(unary_failures));
    std::printf("ratio           %.1f x\n", j["ratio_to_unary"].get<double>());
  }
  return b.errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds absl without NDEBUG, which leaves absl::Mutex's deadlock detector
  // (a lock graph updated on every lock) on in gRPC's mutexes: about 3% of the CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"kspool-bench: load a kspool agent over gRPC and report rates and latency."};
  kspool::bench::LoadOptions o;
  o.agent = "127.0.0.1:7411";
  std::string ceiling_dir;
  bool json = false;
  double drain_wait_s = 0;
  app.add_option("--agent", o.agent, "Agent gRPC address")->capture_default_str();
  app.add_option("--clients", o.clients, "Concurrent clients (one channel each)")->capture_default_str();
  app.add_option("--batch", o.batch, "Messages per Send")->capture_default_str();
  app.add_option("--size", o.size, "Value bytes per message")->capture_default_str();
  app.add_option("--duration", o.duration_s, "Seconds to run")->capture_default_str();
  app.add_option("--count", o.count, "Messages to send in total (instead of --duration)");
  app.add_option("--rate", o.rate, "Open loop: total messages/s (latency from schedule)");
  app.add_option("--topics", o.topics, "Topics bench-0..K-1")->capture_default_str();
  app.add_flag("--keys", o.keys, "Give messages keys (1024 distinct)");
  app.add_option("--ceiling", ceiling_dir,
                 "Also measure raw RocksDB synced batches in this directory (same disk)");
  int ceiling_batch = 0;
  app.add_option("--ceiling-batch", ceiling_batch,
                 "Ceiling batch size (default: the agent's committed batch size in this run)");
  app.add_option("--drain-wait", drain_wait_s,
                 "After the load, wait up to this many seconds for the backlog to drain");
  app.add_flag("--json", json, "One JSON object on stdout");
  app.add_flag("--stream", o.stream,
               "SendStream: one stream per client, --in-flight requests outstanding on each "
               "(defaults: --clients 64 --batch 1)");
  app.add_option("--in-flight", o.in_flight, "With --stream: requests outstanding per stream")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  std::string wait_for = "wal";
  app.add_option("--wait-for", wait_for,
                 "When a Send answers: wal (fsynced), or kafka (every message has its Kafka "
                 "outcome; each is checked to be DELIVERED with a partition and offset)")
      ->capture_default_str()->check(CLI::IsMember({"wal", "kafka"}));
  std::string bruce_datagram;
  app.add_option("--bruce-datagram", bruce_datagram,
                 "Bruce/Dory format: write datagrams to this UNIX socket of the agent (default "
                 "--clients 4 --size 100) for --duration, then run as many clients doing "
                 "single-message unary Sends for as long, and report both rates");
  app.add_option("--tls-ca", o.tls_ca, "PEM CA to trust: talk TLS to the agent")
      ->check(CLI::ExistingFile);
  auto* tls_cert = app.add_option("--tls-cert", o.tls_cert,
                                  "PEM client certificate for mTLS (the identity --acl sees); "
                                  "needs --tls-key")
                       ->check(CLI::ExistingFile);
  auto* tls_key =
      app.add_option("--tls-key", o.tls_key, "PEM private key of --tls-cert")->check(CLI::ExistingFile);
  tls_cert->needs(tls_key);
  tls_key->needs(tls_cert);
  int agent_pid = 0;
  app.add_option("--agent-pid", agent_pid,
                 "The agent's process id (same machine): report its CPU time by thread");
  std::string tcp_lines, bruce_tcp, kafka_offsets, kafka_wait;
  app.add_option("--tcp-lines", tcp_lines,
                 "Write newline-terminated syslog lines (--size B of message text) on one TCP "
                 "connection to HOST:PORT for --duration; report what the socket took");
  app.add_option("--bruce-tcp", bruce_tcp,
                 "Write Bruce/Dory messages (--size B values, topic bench-0) on one TCP "
                 "connection to HOST:PORT for --duration; report what the socket took");
  app.add_option("--kafka-offsets", kafka_offsets,
                 "Print the sum of the high watermarks of bench-0..--topics-1 at BROKERS");
  app.add_option("--kafka-wait", kafka_wait,
                 "Poll that sum at BROKERS until it reaches --from + --expect, stops growing "
                 "for --idle s, or --drain-wait s pass; --forwarder-pid's CPU at the last rise");
  int64_t wait_from = 0;
  uint64_t expect = 0;
  int forwarder_pid = 0;
  double idle_s = 5;
  app.add_option("--from", wait_from, "With --kafka-wait: the sum before the load");
  app.add_option("--expect", expect, "With --kafka-wait: the messages the forwarder took in");
  app.add_option("--forwarder-pid", forwarder_pid, "With --kafka-wait: the forwarder's pid");
  app.add_option("--idle", idle_s, "With --kafka-wait: seconds without a rise that end it")
      ->capture_default_str();
  std::string ceiling_only;
  app.add_option("--ceiling-only", ceiling_only,
                 "Only the raw RocksDB ceiling in this directory: --ceiling-batch (default "
                 "1024) messages of --size B per synced write for --duration s; one JSON "
                 "object {\"ceiling\": {...}} on stdout");
  std::string kafka_ceiling, kafka_ceiling_mode = "kspool";
  app.add_option("--kafka-ceiling", kafka_ceiling,
                 "Only the Kafka client alone against these brokers: --size B values to "
                 "bench-0 for --duration s, then until all are acknowledged; one JSON "
                 "object {\"kafka_ceiling\": {...}} on stdout");
  app.add_option("--kafka-ceiling-mode", kafka_ceiling_mode,
                 "kspool: the agent's producer and settings; plain: librdkafka as the peer "
                 "benchmark's rsyslog uses it")
      ->capture_default_str();
  bool grpc_ceiling = false;
  app.add_flag("--grpc-ceiling", grpc_ceiling,
               "Only gRPC alone: the load (--clients, --batch, --size, --duration) against a "
               "child process that answers every Send without doing anything; its CPU per "
               "message as one JSON object {\"grpc_ceiling\": {...}} on stdout");
  CLI11_PARSE(app, argc, argv);
  // Before anything starts gRPC here: it forks the server.
  if (grpc_ceiling) return kspool::bench::RunGrpcCeiling(o);
  if (!kafka_ceiling.empty()) {
    return kspool::bench::RunKafkaCeiling(kafka_ceiling, kafka_ceiling_mode, o.size, o.duration_s);
  }
  if (!ceiling_only.empty()) {
    return kspool::bench::RunCeilingOnly(ceiling_only, ceiling_batch > 0 ? ceiling_batch : 1024,
                                         o.size, o.duration_s);
  }
  if (!tcp_lines.empty())
    return kspool::bench::RunTcp(tcp_lines, kspool::bench::TcpFeedFormat::kSyslogLines, o);
  if (!bruce_tcp.empty())
    return kspool::bench::RunTcp(bruce_tcp, kspool::bench::TcpFeedFormat::kBruce, o);
  if (!kafka_offsets.empty())
    return kspool::bench::RunKafkaCount(kafka_offsets, o.topics, -1, 0, 0, 0, 0);
  if (!kafka_wait.empty()) {
    return kspool::bench::RunKafkaCount(kafka_wait, o.topics, std::max<int64_t>(wait_from, 0),
                                        expect, forwarder_pid, idle_s,
                                        drain_wait_s > 0 ? drain_wait_s : 60);
  }
  o.wait_for_kafka = wait_for == "kafka";
  if (o.stream) {
    if (app.count("--count") || app.count("--rate")) {
      std::fprintf(stderr, "kspool-bench: --stream runs closed loop for --duration only\n");
      return 2;
    }
    if (!app.count("--clients")) o.clients = 64;
    if (!app.count("--batch")) o.batch = 1;
  }

  auto admin =
      kspool::v1::Admin::NewStub(grpc::CreateChannel(o.agent, kspool::bench::ChannelCredentials(o)));
  if (!bruce_datagram.empty()) {
    if (!app.count("--clients")) o.clients = 4;
    return RunBruce(bruce_datagram, o, *admin, json);
  }
  const auto before = Stats(*admin);
  const bool tty = isatty(2);
  std::vector<std::pair<double, uint64_t>> series;  // (seconds since start, acked)
  const auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](uint64_t acked) {
    series.emplace_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), acked);
    if (tty) std::fprintf(stderr, "\r  acked %llu messages...", static_cast<unsigned long long>(acked));
  };
  const auto cpu_before = kspool::bench::TakeCpuSnapshot(agent_pid);
  kspool::bench::LoadResult r =
      o.stream ? kspool::bench::RunStreamLoad(o, progress) : kspool::bench::RunLoad(o, progress);
  const auto cpu_after = kspool::bench::TakeCpuSnapshot(agent_pid);
  if (tty) std::fprintf(stderr, "\n");
  const auto after = Stats(*admin);
  const double delivered_rate = (after.delivered() - before.delivered()) / r.seconds;
  double drain_s = 0;
  auto last = after;
  if (drain_wait_s > 0) {
    auto t0 = std::chrono::steady_clock::now();
    while (last.entries() > 0 && drain_s < drain_wait_s) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      last = Stats(*admin);
      drain_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  // CPU per delivered message: the agent's CPU from the start of the load until the WAL
  // was drained (or the drain wait ran out), over the messages Kafka acknowledged in that
  // span, so drain work that trails the load is counted too.
  const auto cpu_drained = kspool::bench::TakeCpuSnapshot(agent_pid);
  const uint64_t delivered_total = last.delivered() - before.delivered();
  const uint64_t commits = after.group_commits() - before.group_commits();
  const double group = commits ? double(after.appended_messages() - before.appended_messages()) / commits : 0;

  nlohmann::json j;
  j["clients"] = o.clients;
  j["batch"] = o.batch;
  j["size"] = o.size;
  j["rate_target"] = o.rate;
  j["mode"] = o.stream ? "stream" : "unary";
  if (o.stream) j["in_flight"] = o.in_flight;
  j["wait_for"] = wait_for;
  j["requests"] = r.requests;
  j["seconds"] = r.seconds;
  j["acked"] = r.acked;
  j["acked_per_s"] = r.acked / r.seconds;
  j["acked_mb_per_s"] = r.acked * double(o.size) / r.seconds / 1e6;
  j["delivered_per_s"] = delivered_rate;
  j["backlog_before"] = before.entries();
  j["backlog_after"] = after.entries();
  j["drained_after_s"] = drain_s;
  j["group_commit_messages"] = group;
  j["latency_ms"] = {{"p50", kspool::bench::Percentile(r.latencies_ms, 0.5)},
                     {"p99", kspool::bench::Percentile(r.latencies_ms, 0.99)},
                     {"p999", kspool::bench::Percentile(r.latencies_ms, 0.999)},
                     {"max", r.latencies_ms.empty() ? 0 : r.latencies_ms.back()}};
  j["failures"] = r.failures;  // requests
  j["check_errors"] = r.check_errors;  // messages of OK answers
  uint64_t errors = 0;
  for (const auto& [_, n] : r.failures) errors += n;
  for (const auto& [_, n] : r.check_errors) errors += n;
  j["errors"] = errors;
  if (!r.outcome_ms.empty()) {
    j["outcome_ms"] = {{"p50", kspool::bench::Percentile(r.outcome_ms, 0.5)},
                       {"p99", kspool::bench::Percentile(r.outcome_ms, 0.99)}};
  }
  if (o.stream) {
    j["sequence_regressions"] = r.sequence_regressions;
    j["streams_failed"] = r.streams_failed;
  }
  j["cpu"] = kspool::bench::CpuReport(cpu_before, cpu_after, agent_pid, double(r.acked));
  if (agent_pid > 0) {
    j["cpu"]["delivered"] = delivered_total;
    j["cpu"]["agent_us_per_delivered"] =
        delivered_total ? (cpu_drained.agent_s - cpu_before.agent_s) / delivered_total * 1e6 : 0;
  }
  // Throughput over the first and the last tenth of the run (flatness over long runs).
  if (series.size() >= 10) {
    size_t tenth = series.size() / 10;
    auto rate = [&](size_t a, size_t b) {
      double dt = series[b].first - (a ? series[a - 1].first : 0);
      double dn = double(series[b].second - (a ? series[a - 1].second : 0));
      return dt > 0 ? dn / dt : 0;
    };
    double first = rate(0, tenth - 1), last = rate(series.size() - tenth, series.size() - 1);
    j["first_tenth_per_s"] = first;
    j["last_tenth_per_s"] = last;
    j["last_over_first"] = first > 0 ? last / first : 0;
  }
  if (!ceiling_dir.empty()) {
    int b = ceiling_batch > 0 ? ceiling_batch : std::max(1, static_cast<int>(group + 0.5));
    auto c = kspool::bench::MeasureCeiling(ceiling_dir, b, o.size, 5);
    if (!c.ok()) {
      std::fprintf(stderr, "kspool-bench: %s\n", c.status().ToString().c_str());
      return 1;
    }
    j["ceiling"] = {{"batch", b}, {"messages_per_s", c->messages_per_s},
                    {"ratio", (r.acked / r.seconds) / c->messages_per_s},
                    {"cpu_us_per_message", c->cpu_us_per_message}};
    if (agent_pid > 0 && c->cpu_us_per_message > 0) {
      j["ceiling"]["agent_cpu_ratio"] =
          j["cpu"]["agent_us_per_delivered"].get<double>() / c->cpu_us_per_message;
    }
  }
  if (json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("acked      %.0f msg/s  (%.1f MB/s), %llu messages in %.1f s\n",
              j["acked_per_s"].get<double>(), j["acked_mb_per_s"].get<double>(),
              static_cast<unsigned long long>(r.acked), r.seconds);
  std::printf("delivered  %.0f msg/s during the run; backlog %llu -> %llu",
              delivered_rate, static_cast<unsigned long long>(before.entries()),
              static_cast<unsigned long long>(after.entries()));
  if (drain_wait_s > 0) std::printf(" (drained in %.1f s)", drain_s);
  std::printf("\nlatency    p50 %.2f  p99 %.2f  p999 %.2f  max %.2f ms\n",
              j["latency_ms"]["p50"].get<double>(), j["latency_ms"]["p99"].get<double>(),
              j["latency_ms"]["p999"].get<double>(), j["latency_ms"]["max"].get<double>());
  std::printf("group commit %.1f messages per fsync\n", group);
  if (j.contains("last_over_first")) {
    std::printf("flatness   first tenth %.0f msg/s, last tenth %.0f msg/s (ratio %.2f)\n",
                j["first_tenth_per_s"].get<double>(), j["last_tenth_per_s"].get<double>(),
                j["last_over_first"].get<double>());
  }
  if (j.contains("outcome_ms")) {
    std::printf("in agent   receive to last Kafka outcome per request: p50 %.0f  p99 %.0f ms\n",
                j["outcome_ms"]["p50"].get<double>(), j["outcome_ms"]["p99"].get<double>());
  }
  for (const auto& [code, n] : r.failures) std::printf("failures   %s: %llu requests\n", code.c_str(), (unsigned long long)n);
  for (const auto& [check, n] : r.check_errors) std::printf("errors     %s: %llu messages\n", check.c_str(), (unsigned long long)n);
  if (o.stream) {
    std::printf("streams    %d x %d in flight; %llu failed and reopened; %llu sequence regressions\n",
                o.clients, o.in_flight, (unsigned long long)r.streams_failed,
                (unsigned long long)r.sequence_regressions);
  }
  const auto& cpu = j["cpu"];
  std::printf("cpu        machine %.0f%% busy (load %s), bench %.1f s",
              cpu["machine_busy"].get<double>() * 100, cpu["loadavg"].get<std::string>().c_str(),
              cpu["bench_s"].get<double>());
  if (cpu.contains("agent_s")) {
    std::printf(", agent %.1f s (%.1f us/msg):", cpu["agent_s"].get<double>(),
                cpu["agent_us_per_msg"].get<double>());
    for (const auto& [name, sec] : cpu["agent_threads"].items()) {
      if (sec.get<double>() >= 0.05) std::printf(" %s %.1f", name.c_str(), sec.get<double>());
    }
  }
  if (cpu.contains("agent_us_per_delivered")) {
    std::printf("; until drained %.2f us per delivered message",
                cpu["agent_us_per_delivered"].get<double>());
  }
  std::printf("\n");
  if (j.contains("ceiling")) {
    std::printf("ceiling    raw RocksDB, %d x %d B per sync: %.0f msg/s, %.2f us CPU per msg; "
                "kspool ratio %.2f",
                j["ceiling"]["batch"].get<int>(), o.size, j["ceiling"]["messages_per_s"].get<double>(),
                j["ceiling"]["cpu_us_per_message"].get<double>(), j["ceiling"]["ratio"].get<double>());
    if (j["ceiling"].contains("agent_cpu_ratio")) {
      std::printf(", agent CPU per delivered msg / the ceiling's %.2f",
                  j["ceiling"]["agent_cpu_ratio"].get<double>());
    }
    std::printf("\n");
  }
  return 0;
}
