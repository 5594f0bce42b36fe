// kspool-agent: parses flags, wires the parts, waits for SIGTERM/SIGINT (SIGHUP: re-read
// the --acl file).
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>

#include "absl/synchronization/mutex.h"
#include "agent/api/protobuf_log.h"
#include "agent/app/agent.h"
#include "agent/app/config/config.h"
#include "agent/kafka/kafka_producer.h"
#include "base/allocator_settings.h"

extern char** environ;

int main(int argc, char** argv) {
  kspool::ConfigureAllocator();  // before any thread: see base/allocator_settings.h
  // Debian builds absl without NDEBUG, which leaves absl::Mutex's deadlock detector
  // (a lock graph updated on every lock) on in gRPC's mutexes: about 3% of the CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  kspool::agent::ParseOutcome parsed = kspool::agent::ParseConfig(argc, argv, environ);
  if (parsed.exit) {
    std::fputs(parsed.output.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  const kspool::agent::Config& config = parsed.config;
  spdlog::set_default_logger(spdlog::stderr_color_mt("kspool"));
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  kspool::agent::RouteProtobufLogsToSpdlog();  // before other threads: not thread-safe
  // librdkafka's verdict on the Kafka options, before anything is opened: a usage error.
  if (absl::Status s = kspool::agent::KafkaProducer::CheckOptions(config.kafka_options); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }

  // Signals are taken synchronously by this thread; every other thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // re-reads the --acl file
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto agent = kspool::agent::Agent::Start(config);
  if (!agent.ok()) {
    spdlog::critical("cannot start: {}", agent.status().ToString());
    return 1;
  }
  const std::string bruce_tcp = (*agent)->bruce_tcp_address();
  std::printf("kspool-agent ready: grpc=%s http=%s agent_id=%s wal=%s%s%s\n",
              (*agent)->grpc_address().c_str(), (*agent)->http_address().c_str(),
              (*agent)->agent_id().c_str(), config.wal.dir.c_str(),
              bruce_tcp.empty() ? "" : " bruce_tcp=", bruce_tcp.c_str());
  std::fflush(stdout);
  spdlog::info("serving kspool.v1.Spool on {}; producing to {}", (*agent)->grpc_address(),
               config.kafka_brokers);

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) (*agent)->ReloadAcl();
  spdlog::info("received {}, shutting down", strsignal(sig));
  (*agent)->Shutdown();
  return 0;
}
