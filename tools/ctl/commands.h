// kspoolctl's commands: one function per command, which prints its result (text, or
// JSON with Output::json) and returns the process exit code (exit_codes.h).
//
//  * wal ... DIR: read a WAL directory read-only (wal_commands.cc, wal_verify.cc).
//  * dead ... DIR: the dead letters; replay and purge write, with no agent running
//    (dead_commands.cc).
//  * status, report, commit-point, send: a running agent over gRPC (agent_commands.cc).
//  * delivery, watch: what became of messages, by sequence number (delivery_commands.cc).
// Thread safety: one command per process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/ctl/agent_client.h"
#include "tools/ctl/format.h"

namespace kspool::ctl {

struct Output {
  bool json = false;
  ValueFormat value_format = ValueFormat::kAuto;
};

// Which log entries a listing shows.
struct EntryFilter {
  std::optional<std::string> topic;
  uint64_t from_seq = 0;
  uint64_t limit = 0;  // 0: all
};

// Which dead letters a command applies to: all conditions given must hold.
struct DeadSelection {
  std::vector<uint64_t> seqs;  // empty: any
  std::optional<std::string> topic;
  std::optional<std::string> reason;
  bool all = false;  // replay/purge: explicitly everything
  uint64_t from_seq = 0;
  uint64_t limit = 0;  // list: 0 is all
  bool chosen() const { return all || !seqs.empty() || topic || reason; }
};

int WalStats(const std::string& dir, const Output& out);
int WalList(const std::string& dir, const EntryFilter& filter, const Output& out);
int WalShow(const std::string& dir, uint64_t seq, const Output& out);
int WalDump(const std::string& dir, const EntryFilter& filter, const Output& out);
// Exit code 3 when a record fails its checksum or version, sequence or receive-time
// order is broken, or the persisted counters disagree with the log.
int WalVerify(const std::string& dir, const Output& out);

int DeadList(const std::string& dir, const DeadSelection& selection, const Output& out);
int DeadShow(const std::string& dir, uint64_t seq, const Output& out);
int DeadReplay(const std::string& dir, const DeadSelection& selection, const Output& out);
// Without `confirmed`, lists what it would delete and exits with 2.
int DeadPurge(const std::string& dir, const DeadSelection& selection, bool confirmed,
              const Output& out);

struct AgentTarget {
  std::string address;
  int timeout_ms = 10000;
  AgentTls tls;
};

struct SendOptions {
  std::string topic;
  std::optional<std::string> key;
  std::optional<int32_t> partition;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> values;  // empty: one message per stdin line
  // Wait for Kafka: print each message's outcome (partition and offset) too; exit 5 when
  // the call ends before every outcome is known (the sequence numbers are printed).
  bool wait_for_kafka = false;
};

struct WatchOptions {
  uint64_t from_sequence = 1;
  uint64_t count = 0;  // stop after this many outcomes; 0: until stopped (SIGINT, SIGTERM)
};

int AgentSend(const AgentTarget& agent, SendOptions options, const Output& out);
// The same messages in Bruce's format to `target`: a UNIX socket path, or tcp:HOST:PORT;
// PartitionKey messages when `partition_key` is set, else AnyPartition.
int BruceSend(const std::string& target, SendOptions options,
              std::optional<int32_t> partition_key, const Output& out);
int AgentStatus(const AgentTarget& agent, const Output& out);
int AgentReport(const AgentTarget& agent, const Output& out);
int AgentCommitPoint(const AgentTarget& agent, const Output& out);
// One status per sequence number, in the order given (at most 10,000).
int AgentDelivery(const AgentTarget& agent, const std::vector<uint64_t>& sequences, const Output& out);
// Follows the agent's delivery feed; a stop by signal or by `count` exits 0.
int AgentWatch(const AgentTarget& agent, const WatchOptions& options, const Output& out);

}  // namespace kspool::ctl
