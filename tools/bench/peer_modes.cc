#include "tools/bench/peer_modes.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "tools/bench/ceiling.h"
#include "tools/bench/grpc_ceiling.h"
#include "tools/bench/kafka_ceiling.h"
#include "tools/bench/kafka_count.h"

namespace kspool::bench {

int RunTcp(const std::string& address, TcpFeedFormat format, const LoadOptions& o) {
  const TcpFeedResult r = RunTcpFeed(address, format, o.size, "bench-0", o.duration_s);
  if (!r.error.empty()) std::fprintf(stderr, "kspool-bench: %s\n", r.error.c_str());
  nlohmann::json j = {{"mode", format == TcpFeedFormat::kBruce ? "bruce_tcp" : "tcp_lines"},
                      {"size", o.size},
                      {"seconds", r.seconds},
                      {"sent", r.sent},
                      {"sent_per_s", r.seconds > 0 ? r.sent / r.seconds : 0},
                      {"wire_bytes", r.bytes},
                      {"error", r.error}};
  std::printf("%s\n", j.dump().c_str());
  return r.error.empty() ? 0 : 1;
}

int RunKafkaCount(const std::string& brokers, int topics, int64_t wait_from, uint64_t expect,
                  int pid, double idle_s, double max_wait_s) {
  auto count = KafkaCount::Connect(brokers);
  std::vector<std::string> names;
  for (int t = 0; t < std::max(topics, 1); ++t) names.push_back("bench-" + std::to_string(t));
  absl::Status status = count.status();
  nlohmann::json j;
  if (status.ok() && wait_from < 0) {
    auto sum = (*count)->Sum(names);
    status = sum.status();
    if (sum.ok()) j["offsets"] = *sum;
  } else if (status.ok()) {
    auto w = WaitForKafka(**count, names, static_cast<uint64_t>(wait_from), expect, pid, idle_s,
                          max_wait_s);
    status = w.status();
    if (w.ok()) {
      j = {{"offsets", w->offsets},     {"delivered", w->offsets - wait_from},
           {"reached", w->reached},     {"last_change_s", w->last_change_s},
           {"pid_cpu_s", w->pid_cpu_s}, {"waited_s", w->waited_s}};
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "kspool-bench: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int RunCeilingOnly(const std::string& dir, int batch, int size, double seconds) {
  std::error_code ignored;  // MeasureCeiling names the directory if it is not there
  std::filesystem::create_directories(dir, ignored);
  auto c = MeasureCeiling(dir, batch, size, seconds);
  if (!c.ok()) {
    std::fprintf(stderr, "kspool-bench: %s\n", c.status().ToString().c_str());
    return 1;
  }
  nlohmann::json j = {{"ceiling",
                       {{"batch", batch},
                        {"size", size},
                        {"messages_per_s", c->messages_per_s},
                        {"cpu_us_per_message", c->cpu_us_per_message}}}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int RunKafkaCeiling(const std::string& brokers, const std::string& mode, int size, double seconds) {
  if (mode != "kspool" && mode != "plain") {
    std::fprintf(stderr, "kspool-bench: --kafka-ceiling-mode is kspool or plain, not '%s'\n",
                 mode.c_str());
    return 2;
  }
  auto c = MeasureKafkaCeiling(
      brokers, mode == "kspool" ? KafkaCeilingMode::kKspool : KafkaCeilingMode::kPlain, size,
      seconds);
  if (!c.ok()) {
    std::fprintf(stderr, "kspool-bench: %s\n", c.status().ToString().c_str());
    return 1;
  }
  nlohmann::json j = {{"kafka_ceiling",
                       {{"mode", mode},
                        {"size", size},
                        {"delivered", c->delivered},
                        {"seconds", c->seconds},
                        {"messages_per_s", c->delivered_per_s},
                        {"cpu_us_per_message", c->cpu_us_per_message}}}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int RunGrpcCeiling(const LoadOptions& o) {
  auto c = MeasureGrpcCeiling(o);
  if (!c.ok()) {
    std::fprintf(stderr, "kspool-bench: %s\n", c.status().ToString().c_str());
    return 1;
  }
  nlohmann::json j = {{"grpc_ceiling",
                       {{"clients", o.clients},
                        {"batch", o.batch},
                        {"size", o.size},
                        {"messages", c->messages},
                        {"messages_per_s", c->messages_per_s},
                        {"cpu_us_per_message", c->cpu_us_per_message}}}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace kspool::bench
