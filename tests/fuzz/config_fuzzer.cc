// libFuzzer target for the agent's configuration parser (agent/app/config/config.h). The input is
// split at NUL bytes into pieces: a piece starting with 'E' becomes an environment entry
// (KSPOOL_ + the rest), one starting with 'F' the text of a config file (written to a
// file, and --config names it), any other a command-line argument. Properties:
//   - ParseConfig never throws (an exception escaping it aborts: a crash here);
//   - an exit is code 0 (help) or 2 (usage error) with something printed;
//   - a run's config is within the documented ranges: 1 <= max-message-bytes <= the
//     largest librdkafka can carry; durations <= kMaxDurationMs; counts and sizes
//     <= INT64_MAX; a non-empty WAL directory; every kafka option passes
//     CheckKafkaOption (KEY=VALUE, acks all, idempotence on);
//   - what --print-config prints is accepted back as a config file.
// Build and run: tests/fuzz/run.sh config.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/app/config/config.h"
#include "agent/kafka/kafka_options.h"
#include "agent/validate/kafka_limits.h"

namespace {

using kspool::agent::Config;
using kspool::agent::ParseOutcome;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "config_fuzzer: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

void CheckRanges(const Config& c) {
  if (c.limits.max_message_bytes < 1 ||
      c.limits.max_message_bytes > kspool::agent::kLargestMaxMessageBytes) {
    Fail("max_message_bytes out of range", std::to_string(c.limits.max_message_bytes));
  }
  // The WAL keeps its durations as int64: a negative one would read as beyond the limit.
  for (uint64_t ms : {c.drain.max_message_age_ms, c.drain.wal_reopen_interval_ms,
                      c.heartbeat.interval_ms,
                      static_cast<uint64_t>(c.wal.max_dead_letter_age_ms),
                      static_cast<uint64_t>(c.wal.topic_idle_forget_ms),
                      static_cast<uint64_t>(c.wal.delivery_retention_ms), c.drain.retry_backoff_ms,
                      c.drain.retry_backoff_max_ms, c.drain.commit_point_interval_ms,
                      c.drain.shutdown_grace_ms}) {
    if (ms > kspool::agent::kMaxDurationMs) Fail("duration beyond 100 years", std::to_string(ms));
  }
  for (uint64_t n : {c.wal.max_bytes, c.drain.unknown_topic_checks, c.wal.max_queue_bytes,
                     c.topic_max_bytes.bytes, c.dead_letter_max_bytes.bytes,
                     uint64_t{c.wal.max_tracked_topics}, c.limits.max_batch_messages,
                     c.drain.max_inflight_messages, c.drain.max_inflight_bytes}) {
    if (n > static_cast<uint64_t>(INT64_MAX)) Fail("number beyond INT64_MAX", std::to_string(n));
  }
  if (c.wal.dir.empty()) Fail("empty wal_dir accepted");
  for (const std::string& o : c.kafka_options) {
    if (!kspool::agent::CheckKafkaOption(o).ok()) Fail("kafka option accepted", o);
  }
}

// The two files the target writes (a config file and what --print-config printed), one
// pair per process, removed when the fuzzer exits.
struct ScratchFiles {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string config = dir + "/kspool-config-fuzz-" + std::to_string(getpid()) + ".toml";
  const std::string printed =
      dir + "/kspool-config-fuzz-" + std::to_string(getpid()) + "-printed.toml";
  ~ScratchFiles() {
    std::error_code ignored;
    std::filesystem::remove(config, ignored);
    std::filesystem::remove(printed, ignored);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ScratchFiles scratch;
  const std::string& file = scratch.config;
  std::vector<std::string> args = {"kspool-agent"}, env;
  size_t from = 0;
  while (from <= size) {
    size_t end = from;
    while (end < size && data[end] != 0) ++end;
    std::string piece(reinterpret_cast<const char*>(data) + from, end - from);
    from = end + 1;
    if (!piece.empty() && piece[0] == 'E') {
      env.push_back("KSPOOL_" + piece.substr(1));
    } else if (!piece.empty() && piece[0] == 'F') {
      std::ofstream(file, std::ios::trunc) << piece.substr(1);
      args.push_back("--config=" + file);
    } else if (args.size() < 64) {
      args.push_back(piece);
    }
  }
  std::vector<const char*> argv, envp;
  for (const std::string& a : args) argv.push_back(a.c_str());
  for (const std::string& e : env) envp.push_back(e.c_str());
  envp.push_back(nullptr);

  ParseOutcome p = kspool::agent::ParseConfig(static_cast<int>(argv.size()), argv.data(),
                                              envp.data());
  if (p.exit) {
    if (p.exit_code != 0 && p.exit_code != 2) Fail("exit code", std::to_string(p.exit_code));
    if (p.output.empty()) Fail("exit without a message");
    if (p.exit_code == 0 && p.output.rfind("# kspool-agent --print-config", 0) == 0) {
      // What --print-config prints is a config file the parser accepts.
      const std::string& printed = scratch.printed;
      std::ofstream(printed, std::ios::trunc) << p.output;
      const std::string flag = "--config=" + printed;
      const char* again_argv[] = {"kspool-agent", flag.c_str()};
      const char* no_env[] = {nullptr};
      ParseOutcome again = kspool::agent::ParseConfig(2, again_argv, no_env);
      if (again.exit) Fail("--print-config output refused", p.output + "\n" + again.output);
      CheckRanges(again.config);
    }
  } else {
    CheckRanges(p.config);
  }
  return 0;
}
