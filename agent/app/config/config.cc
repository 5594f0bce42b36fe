#include "agent/app/config/config.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "agent/security/acl_rules.h"
#include "agent/app/config/config_print.h"
#include "agent/validate/kafka_limits.h"
#include "agent/kafka/kafka_options.h"
#include "agent/net/socket_file.h"
#include "agent/security/tls_files.h"
#include "wal/open_reserve.h"
#include "wal/wal_dir.h"

namespace kspool::agent {
namespace {

// KSPOOL_WAL_DIR for --wal-dir.
std::string EnvName(const std::string& flag) {
  std::string n = "KSPOOL_";
  for (char c : flag) n.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(c)));
  return n;
}

// "a\nb\n" -> {"a", "b"}; empty lines are skipped.
std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t from = 0;
  while (from <= text.size()) {
    size_t nl = text.find('\n', from);
    if (nl == std::string::npos) nl = text.size();
    if (nl > from) lines.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return lines;
}

bool GivenOnCommandLine(const std::vector<std::string>& args, const std::string& flag) {
  const std::string f = "--" + flag;
  for (const std::string& a : args) {
    if (a == f || a.rfind(f + "=", 0) == 0) return true;
  }
  return false;
}

// `text` as a whole number without a sign, if it is one and at most `max`.
std::optional<uint64_t> ParseAtMost(std::string_view text, uint64_t max) {
  if (text.empty()) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (max - d) / 10) return std::nullopt;  // n * 10 + d > max
    n = n * 10 + d;
  }
  return n;
}

// The check of every unsigned flag. Values are later added to or compared with int64
// times and sizes (now_ms + interval, int64 byte counts), so a flag in milliseconds may
// be at most kMaxDurationMs and any other at most INT64_MAX; "-1" would wrap to 2^64-1.
CLI::Validator UnsignedAtMost(uint64_t max, const std::string& what) {
  return CLI::Validator(
      [max, what](std::string& v) -> std::string {
        if (ParseAtMost(v, max)) return {};
        return "'" + v + "' is not " + what + " from 0 to " + std::to_string(max);
      },
      "", "AT_MOST");
}


// A request larger than --max-append-queue-bytes is refused even by an empty queue, so
// the bound must hold the largest message a Send may carry, and a Bruce batch (flushed
// once it reaches 1 MiB, so up to 1 MiB plus one message); 64 KiB covers the encoding.
std::string CheckAppendQueueBound(const Config& c) {
  const uint64_t bound = c.wal.max_queue_bytes;
  const uint64_t need = (1u << 20) + c.limits.max_message_bytes + (64u << 10);
  if (bound == 0 || bound >= need) return "";
  return "--max-append-queue-bytes " + std::to_string(bound) +
         " is too small: a message of --max-message-bytes " +
         std::to_string(c.limits.max_message_bytes) +
         " or a Bruce batch could never be queued; it must be at least " +
         std::to_string(need) + " (1MiB + that + 64KiB)";
}

}  // namespace

absl::StatusOr<uint64_t> ParseDurationMs(const std::string& text) {
  static const std::vector<std::pair<std::string, uint64_t>> kUnits = {
      {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) {
    return absl::InvalidArgumentError("'" + text + "' is not a duration (e.g. 30s, 15m, 12h, 7d)");
  }
  std::string unit = text.substr(digits);
  for (const auto& [name, ms] : kUnits) {
    if (unit != name) continue;
    std::optional<uint64_t> n = ParseAtMost(std::string_view(text).substr(0, digits),
                                            kMaxDurationMs / ms);
    if (!n) {
      return absl::InvalidArgumentError("'" + text + "' is longer than the longest duration, " +
                                        std::to_string(kMaxDurationMs / 86'400'000) + "d");
    }
    return *n * ms;
  }
  return absl::InvalidArgumentError("'" + text + "' has an unknown unit '" + unit +
                                    "' (use ms, s, m, h or d)");
}

uint64_t ByteSize::Of(uint64_t capacity) const {
  if (percent <= 0) return bytes;
  return static_cast<uint64_t>(static_cast<long double>(capacity) * percent / 100);
}

absl::StatusOr<ByteSize> ParseByteSize(const std::string& text) {
  static const std::vector<std::pair<std::string, uint64_t>> kUnits = {
      {"", 1}, {"B", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
      {"TiB", 1ull << 40}};
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError("'" + text + "' " + why +
                                      " (e.g. 1073741824, 512MiB, 1GiB, or 10% of the WAL)");
  };
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return bad("is not a size");
  ByteSize out;
  if (!text.empty() && text.back() == '%') {
    // Digits, optionally a fraction: "10%", "2.5%".
    char* end = nullptr;
    const std::string number = text.substr(0, text.size() - 1);
    out.percent = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || number.find_first_not_of("0123456789.") !=
                                                     std::string::npos) {
      return bad("is not a percent");
    }
    if (out.percent > 100) return bad("is more than the whole WAL");
    return out;
  }
  for (const auto& [name, mult] : kUnits) {
    if (text.substr(digits) != name) continue;
    // Sizes are compared with int64 byte counts, like every other byte flag.
    std::optional<uint64_t> n = ParseAtMost(std::string_view(text).substr(0, digits),
                                            INT64_MAX / mult);
    if (!n) return bad("is more than " + std::to_string(INT64_MAX) + " bytes");
    out.bytes = *n * mult;
    return out;
  }
  return bad("has an unknown unit");
}

std::string FormatDurationMs(uint64_t ms) {
  if (ms == 0) return "0";
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};
  for (const auto& [name, unit] : kUnits) {
    if (ms % unit != 0) continue;
    if (unit == 86'400'000 && ms == unit) continue;  // one day reads "24h"
    return std::to_string(ms / unit) + name;
  }
  return std::to_string(ms) + "ms";  // not reached: every count is whole milliseconds
}

std::string FormatByteSize(const ByteSize& size) {
  if (size.percent > 0) {
    std::ostringstream o;
    o << size.percent << '%';  // 10 -> "10%", 2.5 -> "2.5%"
    return o.str();
  }
  if (size.bytes == 0) return "0";
  static const std::pair<const char*, uint64_t> kUnits[] = {
      {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
  for (const auto& [name, unit] : kUnits) {
    if (size.bytes % unit == 0) return std::to_string(size.bytes / unit) + name;
  }
  return std::to_string(size.bytes);
}

std::string FormatSocketMode(uint32_t mode) {
  char text[16];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode));
  return text;
}

wal::Options AgentWalOptions() {
  wal::Options o;
  o.dir = "/var/lib/kspool/wal";
  o.max_dead_letter_age_ms = 7 * 86'400'000ll;
  o.topic_idle_forget_ms = 86'400'000;
  o.max_tracked_topics = 10000;
  return o;
}

absl::StatusOr<uint32_t> ParseSocketMode(const std::string& text) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != std::string::npos) {
    return absl::InvalidArgumentError("'" + text + "' is not an octal file mode such as 0660");
  }
  return static_cast<uint32_t>(std::stoul(text, nullptr, 8));
}

namespace {
// Stores what a parsed flag's text gave into its field: a count (milliseconds, a mode)
// as the field's type, a size as a ByteSize or, for a field of bytes, its bytes.
template <typename T>
void AssignParsed(uint64_t value, T* field) {
  *field = static_cast<T>(value);
}
void AssignParsed(const ByteSize& value, ByteSize* field) { *field = value; }
void AssignParsed(const ByteSize& value, uint64_t* field) { *field = value.bytes; }

// A size that cannot be a percent of the WAL's capacity.
absl::StatusOr<ByteSize> ParseAbsoluteByteSize(const std::string& v) {
  absl::StatusOr<ByteSize> b = ParseByteSize(v);
  if (b.ok() && b->percent > 0) {
    return absl::InvalidArgumentError("'" + v + "': a size in bytes, not a percent");
  }
  return b;
}

// The TLS flags belong together, and their files must be usable now (a typo is caught
// at start, not at the first handshake); "" when fine.
std::string CheckTlsFlags(const Config& c) {
  if (c.tls_cert.empty() && c.tls_key.empty() && c.tls_client_ca.empty()) return {};
  if (c.tls_cert.empty() || c.tls_key.empty()) {
    const char* missing = c.tls_cert.empty() ? "--tls-cert" : "--tls-key";
    const char* given = !c.tls_key.empty() ? "--tls-key" : !c.tls_cert.empty() ? "--tls-cert"
                                                                              : "--tls-client-ca";
    return std::string(given) + " needs " + missing + " (TLS takes a certificate and its key)";
  }
  absl::Status s = CheckTlsFiles(TlsFiles{c.tls_cert, c.tls_key, c.tls_client_ca});
  return s.ok() ? std::string() : std::string(s.message());
}

std::string CheckMetricsTlsFlags(const Config& c) {
  if (c.metrics_tls_cert.empty() && c.metrics_tls_key.empty()) return {};
  if (c.metrics_tls_cert.empty()) return "--metrics-tls-key needs --metrics-tls-cert";
  if (c.metrics_tls_key.empty()) return "--metrics-tls-cert needs --metrics-tls-key";
  absl::Status s = CheckTlsFiles(TlsFiles{c.metrics_tls_cert, c.metrics_tls_key, ""},
                                 TlsFlagNames{"--metrics-tls-cert", "--metrics-tls-key", ""});
  return s.ok() ? std::string() : std::string(s.message());
}
}  // namespace

ParseOutcome ParseConfig(int argc, const char* const* argv, const char* const* env) {
  ParseOutcome out;
  Config& c = out.config;
  CLI::App app{"kspool-agent: a durable write-ahead-log spool for Kafka.\n"
               "Every flag can also be set as KSPOOL_<FLAG> in the environment (e.g. "
               "KSPOOL_WAL_DIR) or as `flag = value` in the --config file.\n"
               "Precedence: flags > environment > config file > defaults.",
               "kspool-agent"};
  app.option_defaults()->always_capture_default();
  app.set_config("--config", "", "Config file (TOML or INI: `wal-dir = \"/data/wal\"`)");
  app.set_version_flag("--version", std::string("kspool-agent ") + KSPOOL_VERSION,
                       "Print the version and exit");
  std::map<std::string, CLI::Option*> opts;
  auto add = [&](const std::string& name, auto* target, const std::string& help) {
    opts[name] = app.add_option("--" + name, *target, help);
    if constexpr (std::is_same_v<std::remove_pointer_t<decltype(target)>, uint64_t>) {
      const bool ms = name.size() > 3 && name.compare(name.size() - 3, 3, "-ms") == 0;
      opts[name]->check(ms ? UnsignedAtMost(kMaxDurationMs, "a number of milliseconds")
                           : UnsignedAtMost(INT64_MAX, "a whole number"));
    }
    return opts[name];
  };
  // A flag kept as text and converted into `field` after parsing; `parse` checks the text
  // first, so that an error names the flag. `field`'s value now is the default, given
  // here as text (Format*) so that --help and --print-config show it as a user writes it.
  std::deque<std::string> texts;                  // stable addresses for CLI11
  std::vector<std::function<void()>> conversions;  // run after a successful parse
  auto add_parsed = [&](const std::string& name, auto* field, std::string default_text,
                        const std::string& help, auto parse) {
    std::string* text = &texts.emplace_back(std::move(default_text));
    opts[name] = app.add_option("--" + name, *text, help)->check([parse](const std::string& v) {
      auto r = parse(v);
      return r.ok() ? std::string() : std::string(r.status().message());
    });
    conversions.push_back([text, field, parse] {
      auto r = parse(*text);
      if (r.ok()) AssignParsed(*r, field);
    });
  };
  add("wal-dir", &c.wal.dir, "WAL directory (a persistent volume); created 0700 if missing")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("the WAL directory must not be empty") : std::string();
      });
  add("listen", &c.listen, "gRPC address: HOST:PORT or unix:PATH (port 0 picks a free one)");
  add_parsed("listen-mode", &c.listen_socket.mode, FormatSocketMode(c.listen_socket.mode),
             "File mode of the --listen unix:PATH socket, octal",
             ParseSocketMode);
  add("listen-group", &c.listen_socket.group,
      "Group of the --listen unix:PATH socket (default: the agent's)")
      ->check([](const std::string& v) {  // empty: the agent's group
        return v.empty() ? std::string() : std::string(LookupGroup(v).status().message());
      });
  add("metrics-listen", &c.metrics_listen, "Prometheus /metrics address HOST:PORT");
  add("http-detail-from", &c.http_detail_from,
      "Who may GET /status and /discards on --metrics-listen (per-topic data, payload "
      "bytes): anywhere, or loopback peers only; --acl implies loopback")
      ->check(CLI::IsMember({"anywhere", "loopback"}));
  add("kafka-brokers", &c.kafka_brokers, "Kafka bootstrap servers, comma-separated");
  // No delimiter: a value may hold commas (debug=conf,msg). Several options are several
  // flags, lines of KSPOOL_KAFKA_OPTION, or a list in the config file.
  add("kafka-option", &c.kafka_options,
      "librdkafka property KEY=VALUE, repeatable (e.g. linger.ms=10); acks, "
      "enable.idempotence, delivery.report.only.error, partitioner, "
      "statistics.interval.ms and transactional.id are held where the drain needs them")
      ->check([](const std::string& v) { return std::string(CheckKafkaOption(v).message()); });
  add("kafka-option-file", &c.kafka_option_files,
      "librdkafka property KEY=PATH, repeatable: the value is read from the file at start "
      "(one trailing newline removed), e.g. sasl.password=/run/secrets/kafka-password; "
      "secret values are never shown (docs/SECURITY.md, Kafka security)");
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "Print the effective configuration as a --config file (secrets redacted) and "
               "exit");
  add("tls-cert", &c.tls_cert,
      "PEM certificate chain for TLS on the gRPC listener (needs --tls-key); re-read when "
      "the file changes");
  add("tls-key", &c.tls_key, "PEM private key of --tls-cert");
  add("tls-client-ca", &c.tls_client_ca,
      "PEM CA certificate(s): turns on mTLS, a client must show a certificate signed by one "
      "(needs --tls-cert)");
  add("metrics-tls-cert", &c.metrics_tls_cert,
      "PEM certificate chain: serve --metrics-listen over HTTPS (needs --metrics-tls-key; "
      "may be the files of --tls-cert); re-read when the file changes");
  add("metrics-tls-key", &c.metrics_tls_key, "PEM private key of --metrics-tls-cert");
  add("acl", &c.acl_file,
      "Access rules (TOML: [[allow]] identity, send, admin, quotas) for the gRPC services; "
      "re-read when the file changes and on SIGHUP; none: every caller may do everything");
  add("log-level", &c.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  add("max-message-bytes", &c.limits.max_message_bytes,
      "Largest accepted message (key+value+headers); the default fits librdkafka's and "
      "Kafka's default limit of 1,000,000 bytes with Kafka's and kspool's overhead")
      ->check(CLI::PositiveNumber)
      ->check(UnsignedAtMost(kLargestMaxMessageBytes,
                             "a message size in bytes (librdkafka's largest message.max.bytes, "
                             "1000000000, less " +
                                 std::to_string(kKafkaMessageOverheadBytes) +
                                 " bytes of overhead)"));
  add("max-batch-messages", &c.limits.max_batch_messages, "Most messages in one Send")
      ->check(CLI::PositiveNumber);
  add("max-headers", &c.limits.max_headers, "Most headers on one message")
      ->check(CLI::PositiveNumber);
  add_parsed("max-future-timestamp", &c.limits.max_future_timestamp_ms,
             FormatDurationMs(c.limits.max_future_timestamp_ms),
             "Largest lead of a message's timestamp_ms over the agent's clock, e.g. 1h; "
             "beyond it (or before 1970) INVALID_ARGUMENT",
             ParseDurationMs);
  add("max-inflight-messages", &c.drain.max_inflight_messages, "Drain window: messages in flight")
      ->check(CLI::PositiveNumber);
  add("max-inflight-bytes", &c.drain.max_inflight_bytes, "Drain window: bytes in flight")
      ->check(CLI::PositiveNumber);
  add("retry-backoff-ms", &c.drain.retry_backoff_ms,
      "First delay before re-producing a failed message")
      ->check(CLI::PositiveNumber);
  add("retry-backoff-max-ms", &c.drain.retry_backoff_max_ms, "Largest re-produce delay")
      ->check(CLI::PositiveNumber);
  add("commit-point-interval-ms", &c.drain.commit_point_interval_ms,
      "How often the commit point is recomputed and persisted")
      ->check(CLI::PositiveNumber);
  add("group-commit-delay-us", &c.wal.group_commit_delay_us,
      "After a Send reaches the WAL, wait up to this many microseconds for more to share "
      "its fsync: less CPU per message at moderate load, for up to this much more Send "
      "latency; 0 = write at once")
      ->check(UnsignedAtMost(100000, "a number of microseconds"));
  add("wal-max-bytes", &c.wal.max_bytes,
      "WAL capacity (bytes of pending messages); 0 = half of the WAL's file system");
  add_parsed("wal-reserve-bytes", &c.wal.reserve_bytes, FormatByteSize({c.wal.reserve_bytes}),
             "A file kept on the WAL's volume, deleted so that the WAL can open when the "
             "volume is full (Sends are then refused until it can be made again), e.g. "
             "64MiB; 0 = an eighth of the volume, at most 256MiB; from 4MiB to a quarter "
             "of the volume",
             ParseAbsoluteByteSize);
  add_parsed("max-message-age", &c.drain.max_message_age_ms,
             FormatDurationMs(c.drain.max_message_age_ms),
             "Discard (into the dead letters, reason 'expired') messages older than this, "
             "e.g. 7d; 0 = never",
             ParseDurationMs);
  add_parsed("max-append-queue-bytes", &c.wal.max_queue_bytes,
             FormatByteSize({c.wal.max_queue_bytes}),
             "Bytes of Sends waiting for the WAL's disk (e.g. 64MiB); beyond it "
             "RESOURCE_EXHAUSTED; 0 = no bound",
             ParseAbsoluteByteSize);
  add_parsed("topic-max-bytes", &c.topic_max_bytes, FormatByteSize(c.topic_max_bytes),
             "Live bytes one topic may fill in the WAL (bytes, e.g. 2GiB, or a percent of the "
             "capacity, e.g. 10%); beyond it only that topic's Sends get RESOURCE_EXHAUSTED; "
             "0 = no limit",
             ParseByteSize);
  add_parsed("dead-letter-max-bytes", &c.dead_letter_max_bytes,
             FormatByteSize(c.dead_letter_max_bytes),
             "Dead letters (they count against the WAL capacity) beyond this size are removed, "
             "oldest first (bytes, or a percent of the capacity); 0 = no own limit",
             ParseByteSize);
  add_parsed("dead-letter-max-age", &c.wal.max_dead_letter_age_ms,
             FormatDurationMs(static_cast<uint64_t>(c.wal.max_dead_letter_age_ms)),
             "Dead letters discarded longer ago than this are removed, e.g. 7d; 0 = kept",
             ParseDurationMs);
  add_parsed("delivery-retention", &c.wal.delivery_retention_ms,
             FormatDurationMs(static_cast<uint64_t>(c.wal.delivery_retention_ms)),
             "Keep each message's outcome (partition and offset, or discard reason) for "
             "GetDeliveryStatus and WatchDeliveries this long after it and every message "
             "below it are settled (those above a waiting message are kept while it waits), "
             "e.g. 1h; 0 = no time limit",
             ParseDurationMs);
  add_parsed("delivery-retention-bytes", &c.wal.delivery_retention_bytes,
             FormatByteSize({c.wal.delivery_retention_bytes}),
             "Most disk the kept outcomes may take (e.g. 256MiB), also while a message "
             "waits; beyond it the oldest are forgotten; 0 = no size limit",
             ParseAbsoluteByteSize);
  add_parsed("topic-idle-forget", &c.wal.topic_idle_forget_ms,
             FormatDurationMs(static_cast<uint64_t>(c.wal.topic_idle_forget_ms)),
             "A topic with nothing in the WAL and no Send for this long stops being tracked "
             "(its commit point; its counters stay), e.g. 24h; 0 = never",
             ParseDurationMs);
  add_parsed("reconcile-max-hold", &c.drain.reconcile_max_hold_ms,
             FormatDurationMs(c.drain.reconcile_max_hold_ms),
             "After a restart, how long messages found in the WAL may wait for their "
             "partitions to be read back from Kafka (copies found there are not produced "
             "again), e.g. 60s; then they are produced; 0 = no reconciliation",
             ParseDurationMs);
  add_parsed("reconcile-max-bytes", &c.reconcile.max_bytes_per_partition,
             FormatByteSize({c.reconcile.max_bytes_per_partition}),
             "After a restart, the most bytes read back per partition to reconcile, e.g. 64MiB",
             ParseAbsoluteByteSize);
  add_parsed("reconcile-time-margin", &c.reconcile.time_margin_ms,
             FormatDurationMs(static_cast<uint64_t>(c.reconcile.time_margin_ms)),
             "After a restart, a partition without a settled watermark is read from the "
             "oldest waiting message's receive time minus this, e.g. 60s",
             ParseDurationMs);
  add("unknown-topic-checks", &c.drain.unknown_topic_checks,
      "Fresh-metadata checks that a topic does not exist before its messages are discarded")
      ->check(CLI::PositiveNumber);
  add("wal-reopen-interval-ms", &c.drain.wal_reopen_interval_ms,
      "After a WAL I/O error (e.g. full disk), how often to try reopening it")
      ->check(CLI::PositiveNumber);
  add("max-tracked-topics", &c.wal.max_tracked_topics,
      "Most topics whose commit points are tracked; beyond it the longest idle ones with "
      "nothing in the WAL stop being tracked early. Also the most topic names a Kafka "
      "client keeps: past it, it is replaced at a quiet moment; 0 = no cap");
  add_parsed("heartbeat-interval", &c.heartbeat.interval_ms,
             FormatDurationMs(c.heartbeat.interval_ms),
             "Send a heartbeat with the commit point to every partition of the heartbeat "
             "topics this often, e.g. 10s; 0 = off",
             ParseDurationMs);
  add("heartbeat-topics", &c.heartbeat.topics,
      "Topics that get heartbeats, comma-separated; empty = every topic the agent tracks "
      "(see --topic-idle-forget)")
      ->delimiter(',');
  add("max-connections", &c.max_connections,
      "Most open gRPC client connections; beyond it new ones are refused (lowered to fit "
      "the open-files limit)")
      ->check(CLI::PositiveNumber);
  add("max-streams-per-connection", &c.max_streams_per_connection,
      "Most concurrent calls on one gRPC connection")
      ->check(CLI::Range(uint64_t{1}, uint64_t{INT32_MAX}));
  add_parsed("idle-timeout", &c.idle_timeout_ms, FormatDurationMs(c.idle_timeout_ms),
             "gRPC connections with no call for this long are closed (clients reconnect), "
             "e.g. 5m",
             [](const std::string& v) -> absl::StatusOr<uint64_t> {
               absl::StatusOr<uint64_t> ms = ParseDurationMs(v);
               if (ms.ok() && (*ms < 1000 || *ms > INT32_MAX)) {
                 return absl::InvalidArgumentError("'" + v + "' is not from 1s to 24d");
               }
               return ms;
             });
  add_parsed("max-receive-memory", &c.max_receive_memory,
             FormatByteSize({c.max_receive_memory}),
             "Memory for requests being received and appended (e.g. 256MiB); beyond it "
             "Sends get RESOURCE_EXHAUSTED with retry-after-ms",
             [](const std::string& v) -> absl::StatusOr<ByteSize> {
               absl::StatusOr<ByteSize> b = ParseByteSize(v);
               if (b.ok() && (b->percent > 0 || b->bytes < (16u << 20))) {
                 return absl::InvalidArgumentError("'" + v + "': a size in bytes of at least 16MiB");
               }
               return b;
             });
  add_parsed("max-waiting-memory", &c.max_waiting_memory,
             FormatByteSize({c.max_waiting_memory}),
             "Memory for WAIT_FOR_KAFKA Sends waiting for their outcomes (24 bytes per "
             "message, e.g. 256MiB); beyond it such Sends get RESOURCE_EXHAUSTED before "
             "they are appended; 0 = no bound",
             ParseAbsoluteByteSize);
  add("bruce-datagram-socket", &c.bruce_datagram_socket,
      "Also accept Bruce/Dory-format messages on this UNIX datagram socket (PATH)");
  add("bruce-stream-socket", &c.bruce_stream_socket,
      "Also accept Bruce/Dory-format messages on this UNIX stream socket (PATH)");
  add("bruce-tcp", &c.bruce_tcp,
      "Also accept Bruce/Dory-format messages on TCP HOST:PORT (loopback addresses only)");
  add("bruce-max-message-bytes", &c.bruce_max_message_bytes,
      "Largest Bruce/Dory-format message, whole (0: 64KiB for datagrams, 2MiB for streams)")
      ->check(UnsignedAtMost(INT32_MAX, "a message size in bytes"));
  add_parsed("bruce-socket-mode", &c.bruce_socket.mode, FormatSocketMode(c.bruce_socket.mode),
             "File mode of the Bruce/Dory UNIX sockets, octal (e.g. 0660)", ParseSocketMode);
  add("bruce-socket-group", &c.bruce_socket.group,
      "Group of the Bruce/Dory UNIX sockets (default: the agent's)");
  add("shutdown-grace-ms", &c.drain.shutdown_grace_ms,
      "At SIGTERM, how long in-flight produce may finish; the rest stays in the WAL");

  // Environment variables become flags unless the flag itself was given, so that they
  // beat the config file (CLI11 alone would let the file win).
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> extra;
  for (const char* const* e = env; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos || kv.rfind("KSPOOL_", 0) != 0) continue;
    std::string name = kv.substr(0, eq), value = kv.substr(eq + 1);
    bool known = false;
    for (const auto& [flag, opt] : opts) {
      if (EnvName(flag) != name) continue;
      known = true;
      if (GivenOnCommandLine(args, flag)) continue;
      if (flag == "kafka-option" || flag == "kafka-option-file") {  // one a line: may hold commas
        for (const std::string& line : SplitLines(value)) extra.push_back("--" + flag + "=" + line);
      } else {
        extra.push_back("--" + flag + "=" + value);
      }
    }
    if (name == "KSPOOL_CONFIG") {
      known = true;
      if (!GivenOnCommandLine(args, "config")) extra.push_back("--config=" + value);
    }
    if (!known) {
      out.exit = true;
      out.exit_code = 2;
      out.output = "unknown environment variable " + name + " (see --help for the flags)\n";
      return out;
    }
  }
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream o, err;
    // Help is exit 0; any bad flag, variable or file is a usage error, exit 2.
    out.exit_code = app.exit(e, o, err) == 0 ? 0 : 2;
    out.exit = true;
    out.output = o.str() + err.str();
    return out;
  }
  for (const std::function<void()>& convert : conversions) convert();
  // Here, not as a CLI11 check: the default directory is checked too.
  if (absl::Status s = wal::CheckWalDirNotWorldWritable(c.wal.dir); !s.ok()) {
    out.exit = true;
    out.exit_code = 2;
    out.output = "--wal-dir: " + std::string(s.message()) + "\n";
    return out;
  }
  std::string bad = CheckTlsFlags(c);
  if (bad.empty()) bad = CheckMetricsTlsFlags(c);
  if (bad.empty()) {
    bad = std::string(AddKafkaOptionFiles(c.kafka_option_files, &c.kafka_options).message());
  }
  if (bad.empty() && !c.acl_file.empty()) {  // a bad file is caught at start
    absl::StatusOr<AclRules> acl = LoadAclFile(c.acl_file);
    if (!acl.ok()) bad = "--acl " + std::string(acl.status().message());
  }
  if (!bad.empty()) {
    out.exit = true;
    out.exit_code = 2;
    out.output = bad + "\n";
    return out;
  }
  // A quarter of it is the most one request may take (agent.cc, DecodedRequestBudget):
  // it must hold the largest message, or that message could never be sent.
  if (c.max_receive_memory / 4 < c.limits.max_message_bytes + (64u << 10)) {
    out.exit = true;
    out.exit_code = 2;
    out.output = "--max-receive-memory " + std::to_string(c.max_receive_memory) +
                 " is too small for --max-message-bytes " +
                 std::to_string(c.limits.max_message_bytes) +
                 ": it must be at least 4 x (that + 64KiB)\n";
  } else if (std::string small = CheckAppendQueueBound(c); !small.empty()) {
    out.exit = true;
    out.exit_code = 2;
    out.output = small + "\n";
  } else if (absl::StatusOr<uint64_t> reserve =
                 wal::ResolveReserveBytesFor(c.wal.dir, c.wal.reserve_bytes);
             !reserve.ok()) {
    out.exit = true;
    out.exit_code = 2;
    out.output = std::string(reserve.status().message()) + " (--wal-dir " + c.wal.dir + ")\n";
  } else if (print_config) {
    out.exit = true;
    out.output = EffectiveConfigText(app);
  }
  return out;
}

}  // namespace kspool::agent
