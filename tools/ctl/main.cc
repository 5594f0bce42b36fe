// kspoolctl: inspect a WAL directory (also a running agent's, read-only), operate on its
// dead letters, and ask a running agent. This file is the command line only; each
// command lives in commands.h.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "tools/ctl/commands.h"
#include "tools/ctl/exit_codes.h"

namespace {

using namespace kspool::ctl;

constexpr char kFooter[] =
    "Reading commands (wal ..., dead list|show) open the WAL read-only and change nothing, "
    "so they work on a running agent's WAL and on a copy. dead replay and dead purge write, "
    "and refuse while an agent runs on the WAL.\n"
    "Output is text for people; --json prints one JSON object (wal list, wal dump, "
    "dead list and watch: one object per line).\n";

// Every numeric argument: plain decimal digits (a '-' only where `min` is negative) from
// `min` to `max`, checked before CLI11 converts it: its conversion to an unsigned type
// wraps "-5" to 18446744073709551611 and reads "0x10" as 16.
template <typename T>
std::optional<T> ParseWhole(std::string_view v, T min, T max) {
  T n{};
  const bool sign_ok = v.empty() || v[0] != '-' || min < 0;
  const bool digits = !v.empty() && v != "-" &&
                      v.find_first_not_of("0123456789", v[0] == '-') == std::string::npos;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (sign_ok && digits && ec == std::errc() && end == v.data() + v.size() && n >= min && n <= max) {
    return n;
  }
  return std::nullopt;
}

template <typename T>
CLI::Validator Whole(T min, T max, const std::string& what) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        if (ParseWhole<T>(v, min, max)) return {};
        return "'" + v + "' is not " + what + " (" + std::to_string(min) + " to " +
               std::to_string(max) + ")";
      },
      "", "WHOLE");
}

// `delivery` asks for at most this many sequence numbers (the API's bound).
constexpr uint64_t kMaxDeliverySequences = 10000;

// "N" or "A..B" (A <= B, at most kMaxDeliverySequences numbers): the first and last.
std::optional<std::pair<uint64_t, uint64_t>> ParseSeqRange(std::string_view v) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const size_t dots = v.find("..");
  if (dots == std::string_view::npos) {
    auto n = ParseWhole<uint64_t>(v, 0, kMax);
    if (!n) return std::nullopt;
    return std::make_pair(*n, *n);
  }
  auto a = ParseWhole<uint64_t>(v.substr(0, dots), 0, kMax);
  auto b = ParseWhole<uint64_t>(v.substr(dots + 2), 0, kMax);
  if (!a || !b || *a > *b || *b - *a >= kMaxDeliverySequences) return std::nullopt;
  return std::make_pair(*a, *b);
}

CLI::Validator SeqOrRange() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (ParseSeqRange(v)) return {};
        return "'" + v + "' is not a sequence number (0 to 18446744073709551615) or a range " +
               "A..B of at most " + std::to_string(kMaxDeliverySequences);
      },
      "", "SEQ|A..B");
}

CLI::Validator Seq() {
  return Whole<uint64_t>(0, std::numeric_limits<uint64_t>::max(), "a sequence number");
}
CLI::Validator Count() {
  return Whole<uint64_t>(0, std::numeric_limits<uint64_t>::max(), "a count");
}

void AddValueFormat(CLI::App* cmd, std::string* format) {
  cmd->add_option("--value-format", *format,
                  "How to show values, keys and headers: auto (text when printable, else hex), "
                  "text, hex, base64")
      ->check(CLI::IsMember({"auto", "text", "hex", "base64"}))
      ->capture_default_str();
}

void AddEntryFilter(CLI::App* cmd, EntryFilter* f) {
  cmd->add_option("--topic", f->topic, "Only entries of this topic");
  cmd->add_option("--from", f->from_seq, "Start at this sequence number")->check(Seq());
  cmd->add_option("--limit", f->limit, "At most this many entries (0: all)")->check(Count());
}

void AddDeadSelection(CLI::App* cmd, DeadSelection* s, bool with_all) {
  cmd->add_option("--seq", s->seqs, "These dead letters (repeatable, or comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(Seq());
  cmd->add_option("--topic", s->topic, "Dead letters of this topic");
  cmd->add_option("--reason", s->reason, "Dead letters discarded for this reason, e.g. msg_size_too_large");
  if (with_all) cmd->add_flag("--all", s->all, "Every dead letter");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{std::string("kspoolctl: inspect a kspool WAL and operate a kspool agent.\n") +
               kExitCodesHelp};
  app.footer(kFooter);
  app.fallthrough();  // global options may also follow the command
  app.require_subcommand(1);
  Output out;
  AgentTarget agent{"127.0.0.1:7411", 10000, {}};
  std::string value_format = "auto";
  app.add_option("--agent", agent.address, "Agent gRPC address HOST:PORT or unix:PATH")
      ->envname("KSPOOL_AGENT")
      ->capture_default_str();
  app.add_option("--timeout-ms", agent.timeout_ms, "Deadline of each call to the agent")
      ->check(Whole<int>(1, std::numeric_limits<int>::max(), "a deadline in milliseconds"))
      ->capture_default_str();
  // TLS towards a secured agent; any of them turns it on.
  app.add_option("--tls-ca", agent.tls.ca,
                 "PEM CA certificate(s) the agent's certificate must chain to (turns on TLS; "
                 "default: the system's roots)")
      ->check(CLI::ExistingFile);
  auto* tls_cert = app.add_option("--tls-cert", agent.tls.cert,
                                  "PEM client certificate, for an agent that requires one "
                                  "(--tls-client-ca); needs --tls-key")
                       ->check(CLI::ExistingFile);
  auto* tls_key = app.add_option("--tls-key", agent.tls.key, "PEM private key of --tls-cert")
                      ->check(CLI::ExistingFile);
  tls_cert->needs(tls_key);
  tls_key->needs(tls_cert);
  app.add_flag("--json", out.json, "Print JSON instead of text");

  std::string dir;
  uint64_t seq = 0;
  EntryFilter filter;
  DeadSelection selection;
  bool yes = false;

  auto* wal = app.add_subcommand("wal", "Inspect a WAL directory (read-only)");
  wal->require_subcommand(1);
  auto* wal_stats = wal->add_subcommand(
      "stats", "Entries and bytes, per topic; oldest and newest entry; commit point; counters; dead letters; "
      "settled watermarks");
  auto* wal_list = wal->add_subcommand("list", "One line per entry");
  auto* wal_show = wal->add_subcommand("show", "One whole entry");
  auto* wal_dump = wal->add_subcommand("dump", "Every entry as JSON Lines, with values");
  auto* wal_verify = wal->add_subcommand(
      "verify", "Check every record (checksum, version), the order, and the counters; exit 3 on corruption");
  for (CLI::App* c : {wal_stats, wal_list, wal_show, wal_dump, wal_verify}) {
    c->add_option("DIR", dir, "The WAL directory (--wal-dir of the agent)")->required();
  }
  wal_show->add_option("SEQ", seq, "Sequence number")->required()->check(Seq());
  AddValueFormat(wal_show, &value_format);
  AddValueFormat(wal_dump, &value_format);
  AddEntryFilter(wal_list, &filter);
  AddEntryFilter(wal_dump, &filter);

  auto* dead = app.add_subcommand("dead", "The dead letters: discarded messages, kept with their reason");
  dead->require_subcommand(1);
  auto* dead_list = dead->add_subcommand("list", "One line per dead letter");
  auto* dead_show = dead->add_subcommand("show", "One whole dead letter");
  auto* dead_replay = dead->add_subcommand(
      "replay", "Move dead letters back into the log, with new sequence numbers, for an agent to "
                "deliver (no agent may run on the WAL)");
  auto* dead_purge = dead->add_subcommand(
      "purge", "Delete dead letters for good (needs --yes; no agent may run on the WAL)");
  for (CLI::App* c : {dead_list, dead_show, dead_replay, dead_purge}) {
    c->add_option("DIR", dir, "The WAL directory")->required();
  }
  dead_show->add_option("SEQ", seq, "Sequence number")->required()->check(Seq());
  AddValueFormat(dead_show, &value_format);
  AddDeadSelection(dead_list, &selection, /*with_all=*/false);
  dead_list->add_option("--from", selection.from_seq, "Start at this sequence number")
      ->check(Seq());
  dead_list->add_option("--limit", selection.limit, "At most this many (0: all)")->check(Count());
  AddDeadSelection(dead_replay, &selection, /*with_all=*/true);
  AddDeadSelection(dead_purge, &selection, /*with_all=*/true);
  dead_purge->add_flag("--yes", yes, "Really delete them");

  auto* status = app.add_subcommand("status", "The agent's WAL, in-flight messages and commit points");
  auto* stats = app.add_subcommand("stats", "Same as status");
  auto* report = app.add_subcommand("report", "The agent's discard report at its commit point");
  auto* commit_point = app.add_subcommand("commit-point", "The agent's commit points");
  auto* send = app.add_subcommand("send", "Send messages (values as arguments, or one per stdin line)");
  SendOptions send_options;
  std::vector<std::string> headers;
  send->add_option("--topic", send_options.topic, "Topic")->required();
  send->add_option("--key", send_options.key, "Key of every message");
  send->add_option("--partition", send_options.partition, "Explicit partition")
      ->check(Whole<int32_t>(0, std::numeric_limits<int32_t>::max(), "a partition number"));
  send->add_option("--header", headers, "Header KEY=VALUE of every message (repeatable)")
      ->allow_extra_args(false);
  send->add_option("VALUE", send_options.values, "Values; without any, one message per stdin line");
  std::string bruce_socket, bruce_tcp;
  std::optional<int32_t> partition_key;
  send->add_option("--bruce-socket", bruce_socket,
                   "Write the messages in Bruce/Dory format to this UNIX socket of the agent "
                   "(datagram or stream) instead of gRPC; nothing is answered");
  send->add_option("--bruce-tcp", bruce_tcp,
                   "Write them in Bruce/Dory format to this HOST:PORT of the agent");
  send->add_option("--partition-key", partition_key,
                   "With --bruce-*: PartitionKey messages with this 32-bit key (partition = "
                   "key mod partition count); without it, AnyPartition");
  std::string wait_for = "wal";
  send->add_option("--wait", wait_for,
                   "Answer once the messages are in the WAL (wal), or also in Kafka or "
                   "discarded (kafka: prints each one's partition and offset; if --timeout-ms "
                   "passes first, prints their sequence numbers and exits with 5)")
      ->check(CLI::IsMember({"wal", "kafka"}))
      ->capture_default_str();

  auto* delivery = app.add_subcommand(
      "delivery", "What became of messages, by sequence number: PENDING, DELIVERED (partition, "
                  "offset), DISCARDED (reason) or UNKNOWN");
  std::vector<std::string> seq_args;
  delivery->add_option("SEQ", seq_args, "Sequence numbers, or ranges A..B (at most 10000 in all)")
      ->required()
      ->check(SeqOrRange());
  auto* watch = app.add_subcommand(
      "watch", "Follow the outcomes from a sequence number on, in order, first those known, then "
               "live (until --count, SIGINT or SIGTERM)");
  WatchOptions watch_options;
  watch->add_option("--from", watch_options.from_sequence, "The first sequence number")
      ->required()
      ->check(Seq());
  watch->add_option("--count", watch_options.count, "Stop after this many outcomes")
      ->check(Whole<uint64_t>(1, std::numeric_limits<uint64_t>::max(), "a count"));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  out.value_format = *ParseValueFormat(value_format);

  if (*wal_stats) return WalStats(dir, out);
  if (*wal_list) return WalList(dir, filter, out);
  if (*wal_show) return WalShow(dir, seq, out);
  if (*wal_dump) return WalDump(dir, filter, out);
  if (*wal_verify) return WalVerify(dir, out);
  if (*dead_list) return DeadList(dir, selection, out);
  if (*dead_show) return DeadShow(dir, seq, out);
  if (*dead_replay) return DeadReplay(dir, selection, out);
  if (*dead_purge) return DeadPurge(dir, selection, yes, out);
  if (*status || *stats) return AgentStatus(agent, out);
  if (*report) return AgentReport(agent, out);
  if (*commit_point) return AgentCommitPoint(agent, out);
  if (*send) {
    for (const std::string& h : headers) {
      const size_t eq = h.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "kspoolctl: --header wants KEY=VALUE, got '" << h << "'\n";
        return kExitUsage;
      }
      send_options.headers.emplace_back(h.substr(0, eq), h.substr(eq + 1));
    }
    send_options.wait_for_kafka = wait_for == "kafka";
    if (!bruce_socket.empty() && !bruce_tcp.empty()) {
      std::cerr << "kspoolctl: --bruce-socket or --bruce-tcp, not both\n";
      return kExitUsage;
    }
    if (!bruce_socket.empty() || !bruce_tcp.empty()) {
      return BruceSend(bruce_socket.empty() ? "tcp:" + bruce_tcp : bruce_socket,
                       std::move(send_options), partition_key, out);
    }
    if (partition_key) {
      std::cerr << "kspoolctl: --partition-key goes with --bruce-socket or --bruce-tcp\n";
      return kExitUsage;
    }
    return AgentSend(agent, std::move(send_options), out);
  }
  if (*delivery) {
    std::vector<uint64_t> sequences;
    for (const std::string& a : seq_args) {
      const auto [first, last] = *ParseSeqRange(a);  // validated by SeqOrRange
      for (uint64_t s = first; sequences.size() <= kMaxDeliverySequences; ++s) {
        sequences.push_back(s);
        if (s == last) break;
      }
    }
    if (sequences.size() > kMaxDeliverySequences) {
      std::cerr << "kspoolctl: SEQ: at most " << kMaxDeliverySequences
                << " sequence numbers in one call\n";
      return kExitUsage;
    }
    return AgentDelivery(agent, sequences, out);
  }
  if (*watch) return AgentWatch(agent, watch_options, out);
  return kExitUsage;
}
