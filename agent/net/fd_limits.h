// File-descriptor limits: the agent raises its soft RLIMIT_NOFILE to the hard limit at
// start, then splits what it has between clients and itself. Clients (gRPC and HTTP
// connections) get what is left after a fixed reserve for the WAL (RocksDB's open
// files are capped at wal::kMaxOpenFiles), Kafka sockets, logs and pipes, so that no
// number of client connections can make the WAL fail to open a file.
// Thread safety: call from main before threads start.
#pragma once

#include <cstdint>
#include <string>

namespace kspool::agent {

struct FdBudget {
  uint64_t soft_limit = 0;  // after raising
  uint64_t hard_limit = 0;
  uint64_t reserved = 0;  // never given to client connections
  // Most gRPC client connections: --max-connections, lowered to fit the limit.
  uint64_t grpc_connections = 0;
  // One line for the start-up log.
  std::string Describe(uint64_t requested_connections) const;
};

// Descriptors the agent keeps for itself: RocksDB's table cache and logs, Kafka
// broker sockets, librdkafka's and gRPC's wake-up pipes, stdio, and `http_connections`
// (the caps of the agent's other listeners: the HTTP server's, and the Bruce input's
// stream/TCP clients' when it listens for them).
uint64_t ReservedFds(uint64_t http_connections);

// Raises the soft limit to the hard one (best effort: a failure keeps the old limit)
// and computes the budget. At least one gRPC connection is always allowed.
FdBudget RaiseFdLimitAndBudget(uint64_t max_connections, uint64_t http_connections);

}  // namespace kspool::agent
