// Agent configuration: one struct, filled from command-line flags, KSPOOL_* environment
// variables and a config file, with that precedence (flags > environment > file >
// defaults). Thread safety: a value type; parse once in main.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/validate/kafka_limits.h"

namespace kspool::agent {

// A size in bytes, or a share of the WAL capacity ("10%").
struct ByteSize {
  uint64_t bytes = 0;
  double percent = 0;  // > 0: this share of the capacity; `bytes` is then unused
  // The size in bytes for a WAL of `capacity` bytes (0 = unlimited: a share of it is 0).
  uint64_t Of(uint64_t capacity) const;
};

struct Config {
  std::string wal_dir = "/var/lib/kspool/wal";
  std::string listen = "127.0.0.1:7411";          // host:port or unix:PATH
  uint32_t listen_mode = 0660;                    // unix:PATH: the socket file's mode
  std::string listen_group;                       // and group (empty: the agent's)
  std::string metrics_listen = "127.0.0.1:9411";  // host:port
  std::string kafka_brokers = "127.0.0.1:9092";
  std::vector<std::string> kafka_options;          // librdkafka KEY=VALUE pass-through
  // --kafka-option-file KEY=PATH as given; parsing appends KEY=<content> to kafka_options.
  std::vector<std::string> kafka_option_files;
  std::string log_level = "info";

  // TLS on the gRPC listener (README, "TLS"): PEM files, re-read when they change. A
  // certificate needs its key; a client CA turns on mTLS and needs both.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  // TLS on the metrics/HTTP listener: its own pair (may be the same files), or none.
  std::string metrics_tls_cert;
  std::string metrics_tls_key;
  // Access rules (README, "Access control"): a TOML file, re-read when it changes and on
  // SIGHUP; empty: every caller may do everything.
  std::string acl_file;

  // WAL capacity in bytes of live entries; Sends beyond it get RESOURCE_EXHAUSTED.
  // 0: half of the size of the file system that holds --wal-dir.
  uint64_t wal_max_bytes = 0;
  // Entries older than this (by receive time) are discarded as "expired"; 0 = never.
  uint64_t max_message_age_ms = 0;
  // Fresh-metadata confirmations that a topic does not exist before its entries are
  // discarded as "unknown_topic" (for clusters with topic auto-creation off).
  uint64_t unknown_topic_checks = 3;
  uint64_t wal_reopen_interval_ms = 1000;  // retry period after a WAL I/O error
  uint64_t heartbeat_interval_ms = 0;      // 0: no heartbeats
  std::vector<std::string> heartbeat_topics;  // empty: every topic the WAL tracks

  // Bounds: what clients, time or a stuck topic can make the agent hold (0 = no bound).
  // Appends waiting for the WAL's committer, in bytes; beyond it RESOURCE_EXHAUSTED.
  uint64_t max_append_queue_bytes = 64ull << 20;
  // Live bytes one topic may fill; beyond it that topic's Sends get RESOURCE_EXHAUSTED.
  ByteSize topic_max_bytes;
  // Dead letters (they count against the WAL capacity): beyond either limit the oldest
  // are removed, counted as kspool_dead_letters_dropped_total.
  ByteSize dead_letter_max_bytes{0, 10};
  uint64_t dead_letter_max_age_ms = 7 * 86'400'000ull;
  // A topic with nothing in the WAL and no Send for this long stops being tracked, and
  // so do the longest idle beyond max_tracked_topics.
  uint64_t topic_idle_forget_ms = 86'400'000;
  // The delivery index (GetDeliveryStatus, WatchDeliveries): outcomes older than this,
  // and the oldest beyond this many stored bytes, are forgotten (0 = no limit of the kind).
  uint64_t delivery_retention_ms = 3'600'000;
  uint64_t delivery_retention_bytes = 256ull << 20;
  uint64_t max_tracked_topics = 10000;

  // The front door: what clients can hold (see README, "Limits").
  uint64_t max_connections = 1000;              // lowered to fit RLIMIT_NOFILE
  uint64_t max_streams_per_connection = 100;    // concurrent calls on one connection
  uint64_t idle_timeout_ms = 300'000;           // connections without calls are closed
  uint64_t max_receive_memory = 256ull << 20;   // requests in reception and being appended

  // Request limits (bad input is INVALID_ARGUMENT).
  // Fits Kafka's default limits with Kafka's and kspool's overhead: agent/validate/kafka_limits.h.
  uint64_t max_message_bytes = kDefaultMaxMessageBytes;
  uint64_t max_batch_messages = 10000;
  uint64_t max_headers = kHeadersBudgeted;  // per message; the size default assumes it
  uint64_t max_future_timestamp_ms = 3'600'000;  // client timestamps at most this far ahead

  // Bruce/Dory-format input (README, "Bruce and Dory clients"); empty paths: off.
  std::string bruce_datagram_socket;
  std::string bruce_stream_socket;
  std::string bruce_tcp;  // HOST:PORT, loopback only
  // Largest message; 0: 64 KiB for datagrams, 2 MiB for streams (Bruce's and Dory's).
  uint64_t bruce_max_message_bytes = 0;
  uint32_t bruce_socket_mode = 0660;
  std::string bruce_socket_group;  // empty: the agent's group
  bool bruce_enabled() const {
    return !bruce_datagram_socket.empty() || !bruce_stream_socket.empty() || !bruce_tcp.empty();
  }

  // The drain window: what may be in flight to Kafka at once. Memory is bounded by these,
  // not by the backlog.
  uint64_t max_inflight_messages = 100000;
  uint64_t max_inflight_bytes = 32ull << 20;
  uint64_t retry_backoff_ms = 100;       // first re-produce delay after a failed delivery
  uint64_t retry_backoff_max_ms = 5000;  // cap of the exponential backoff
  uint64_t commit_point_interval_ms = 100;
  // How long the WAL's committer waits for more Sends to join a synced write (0: none).
  uint64_t group_commit_delay_us = 0;
  uint64_t shutdown_grace_ms = 5000;  // time in-flight produce gets at SIGTERM
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

// `env` is the process environment (`environ`), passed in so tests can supply their own.
ParseOutcome ParseConfig(int argc, const char* const* argv, const char* const* env);

}  // namespace kspool::agent
