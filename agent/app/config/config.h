// Agent configuration: one struct, filled from command-line flags, KSPOOL_* environment
// variables and a config file, with that precedence (flags > environment > file >
// defaults). It embeds the components' option structs, whose initializers are the
// defaults. Thread safety: a value type; parse once in main.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/background/heartbeat_options.h"
#include "agent/drain/drain_loop.h"
#include "agent/kafka/reconciler_options.h"
#include "agent/net/grpc_listener.h"
#include "agent/net/socket_file.h"
#include "agent/validate/request_validator.h"
#include "wal/wal.h"

namespace kspool::agent {

// A size in bytes, or a share of the WAL capacity ("10%").
struct ByteSize {
  uint64_t bytes = 0;
  double percent = 0;  // > 0: this share of the capacity; `bytes` is then unused
  // The size in bytes for a WAL of `capacity` bytes (0 = unlimited: a share of it is 0).
  uint64_t Of(uint64_t capacity) const;
};

// The WAL's options with the agent's defaults. The WAL library's own defaults are "no
// limit" (for kspoolctl and tests); the agent's differ for the directory, the dead
// letters' age, idle topics and the cap on tracked topics.
wal::Options AgentWalOptions();

// Each setting's default is written once: in the component's option struct embedded
// here (wal, drain, limits, heartbeat, listen_socket, bruce_socket), or, for a setting only the
// agent has, in the field below. The flags bind to these fields, so --help and
// --print-config show the same defaults.
struct Config {
  // The WAL (--wal-dir is wal.dir). Set at start, not by flags: wal.clock, wal.env,
  // wal.on_group_commit; wal.max_topic_bytes and wal.max_dead_letter_bytes, from
  // topic_max_bytes and dead_letter_max_bytes below (a size or a share of the capacity);
  // and wal.max_bytes when it is 0: half of the size of the file system that holds
  // wal.dir. Beyond wal.max_bytes of live entries, Sends get RESOURCE_EXHAUSTED.
  // wal.reserve_bytes 0 (--wal-reserve-bytes) is automatic, resolved at start
  // (wal/open_reserve.h, ResolveReserveBytes).
  wal::Options wal = AgentWalOptions();
  // Live bytes one topic may fill; beyond it that topic's Sends get RESOURCE_EXHAUSTED.
  ByteSize topic_max_bytes;
  // Dead letters (they count against the WAL capacity): beyond either this or
  // wal.max_dead_letter_age_ms the oldest are removed, counted as
  // kspool_dead_letters_dropped_total.
  ByteSize dead_letter_max_bytes{0, 10};

  // The drain. Its window (max_inflight_messages, max_inflight_bytes) bounds what is in
  // flight to Kafka, so memory follows it and not the backlog. max_message_age_ms: older
  // entries (by receive time) are discarded as "expired" (0 = never).
  // unknown_topic_checks: fresh-metadata confirmations that a topic does not exist before
  // its entries are discarded as "unknown_topic". wal_reopen_interval_ms: the retry
  // period after a WAL I/O error. shutdown_grace_ms: what in-flight produce gets at
  // SIGTERM. Set at start, not by flags: its clock, metrics, partition cache and hooks.
  DrainOptions drain;
  // Reconciliation at start: how partitions are read back (agent/kafka/kafka_reconciler.h).
  ReconcilerOptions reconcile;

  // Request limits (bad input is INVALID_ARGUMENT), for gRPC Sends and the Bruce input.
  // The size default fits Kafka's default limits with Kafka's and kspool's overhead
  // (agent/validate/kafka_limits.h).
  RequestLimits limits;

  std::string listen = "127.0.0.1:7411";  // host:port or unix:PATH
  SocketFileOptions listen_socket;         // unix:PATH: the socket file's mode and group
  std::string metrics_listen = "127.0.0.1:9411";  // host:port
  // Who may GET /status and /discards: "anywhere" or "loopback" (peers on a loopback
  // address). --acl makes it "loopback" whatever this says (docs/SECURITY.md).
  std::string http_detail_from = "anywhere";
  std::string kafka_brokers = "127.0.0.1:9092";
  std::vector<std::string> kafka_options;          // librdkafka KEY=VALUE pass-through
  // --kafka-option-file KEY=PATH as given; parsing appends KEY=<content> to kafka_options.
  std::vector<std::string> kafka_option_files;
  std::string log_level = "info";

  // TLS on the gRPC listener (docs/SECURITY.md, "TLS"): PEM files, re-read when they change. A
  // certificate needs its key; a client CA turns on mTLS and needs both.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  // TLS on the metrics/HTTP listener: its own pair (may be the same files), or none.
  std::string metrics_tls_cert;
  std::string metrics_tls_key;
  // Access rules (docs/SECURITY.md, "Access control"): a TOML file, re-read when it changes and on
  // SIGHUP; empty: every caller may do everything.
  std::string acl_file;

  // Heartbeats (--heartbeat-interval, --heartbeat-topics); off by default.
  HeartbeatOptions heartbeat;

  // The front door: what clients can hold (docs/OPERATIONS.md, "The front door").
  uint64_t max_connections = kDefaultMaxConnections;  // lowered to fit RLIMIT_NOFILE
  uint64_t max_streams_per_connection = 100;    // concurrent calls on one connection
  uint64_t idle_timeout_ms = 300'000;           // connections without calls are closed
  uint64_t max_receive_memory = 256ull << 20;   // requests in reception and being appended
  uint64_t max_waiting_memory = 256ull << 20;   // state of waiting WAIT_FOR_KAFKA Sends

  // Bruce/Dory-format input (README, "Bruce and Dory clients"; docs/BRUCE.md); empty paths: off.
  std::string bruce_datagram_socket;
  std::string bruce_stream_socket;
  std::string bruce_tcp;  // HOST:PORT, loopback only
  // Largest message; 0: 64 KiB for datagrams, 2 MiB for streams (Bruce's and Dory's).
  uint64_t bruce_max_message_bytes = 0;
  SocketFileOptions bruce_socket;  // the UNIX sockets' mode and group
  bool bruce_enabled() const {
    return !bruce_datagram_socket.empty() || !bruce_stream_socket.empty() || !bruce_tcp.empty();
  }
};

// What parsing decided: run with `config`, or exit with `exit_code` after printing
// `output` (help text, or an error naming the bad flag / variable / file).
struct ParseOutcome {
  Config config;
  bool exit = false;
  int exit_code = 0;
  std::string output;
};

// The longest duration any flag takes (durations and *-ms flags): 100 years. Far below
// where an int64 count of milliseconds, or of std::chrono's nanoseconds, added to the
// current time would overflow.
inline constexpr uint64_t kMaxDurationMs = 36500ull * 86'400'000;

// "500ms", "30s", "15m", "12h", "7d", or a plain number of seconds; "0" is zero. At most
// kMaxDurationMs; no sign.
absl::StatusOr<uint64_t> ParseDurationMs(const std::string& text);

// "1048576", "64MiB", "1GiB" (KiB, MiB, GiB, TiB), or a percent of the WAL capacity
// such as "10%" or "2.5%"; "0" is zero. At most INT64_MAX bytes.
absl::StatusOr<ByteSize> ParseByteSize(const std::string& text);

// "0660" -> 0660 (--listen-mode, --bruce-socket-mode); INVALID_ARGUMENT unless 1-4 octal digits.
absl::StatusOr<uint32_t> ParseSocketMode(const std::string& text);

// The inverses, for showing a default in --help and --print-config: Parse*(Format*(x))
// gives x back. Durations take the largest unit that divides them, but a single day is
// "24h"; sizes the largest binary unit that divides them; modes four octal digits.
std::string FormatDurationMs(uint64_t ms);
std::string FormatByteSize(const ByteSize& size);
std::string FormatSocketMode(uint32_t mode);

// `env` is the process environment (`environ`), passed in so tests can supply their own.
ParseOutcome ParseConfig(int argc, const char* const* argv, const char* const* env);

}  // namespace kspool::agent
