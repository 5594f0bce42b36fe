// gRPC's own ceiling beside RocksDB's (ceiling.h) and the Kafka client's (kafka_ceiling.h):
// what the agent's gRPC API costs per message before the agent does anything with it. A
// child process serves kspool.v1.Spool/Send on 127.0.0.1 (port 0) with gRPC's callback
// API, as the agent does, and answers every Send OK with one sequence number per message
// and does nothing else: no validation, no WAL, no Kafka. This process loads it with the
// same generator as the agent (load.h: clients, messages per Send, value size), and the
// child's CPU (every thread: gRPC's pollers and executor) per answered message is the
// least the agent's gRPC batched path can spend on its transport.
// Thread safety: one call at a time, before this process has started gRPC (it forks).
#pragma once

#include "absl/status/statusor.h"
#include "tools/bench/load.h"

namespace kspool::bench {

struct GrpcCeilingResult {
  double messages_per_s = 0;  // answered OK over the load's span
  uint64_t messages = 0;
  double cpu_us_per_message = 0;  // the serving process's CPU per answered message
};

// Runs `load` (its `agent` ignored) against the null server for load.duration_s.
absl::StatusOr<GrpcCeilingResult> MeasureGrpcCeiling(LoadOptions load);

}  // namespace kspool::bench
