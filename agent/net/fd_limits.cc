#include "agent/net/fd_limits.h"

#include <sys/resource.h>

#include <algorithm>

#include "wal/options.h"

namespace kspool::agent {

uint64_t ReservedFds(uint64_t http_connections) {
  // RocksDB: the table cache, plus its logs, MANIFEST, LOCK, info log, directories and
  // compaction outputs. Kafka: a socket or two per broker and librdkafka's wake-up
  // pipes. gRPC: its epoll set and wake-up fds. Stdio and spare room for the unexpected.
  constexpr uint64_t kRocksDbOther = 64;
  constexpr uint64_t kKafkaAndMisc = 128;
  return static_cast<uint64_t>(wal::kMaxOpenFiles) + kRocksDbOther + kKafkaAndMisc +
         http_connections;
}

FdBudget RaiseFdLimitAndBudget(uint64_t max_connections, uint64_t http_connections) {
  FdBudget b;
  struct rlimit rl {};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_cur < rl.rlim_max) {
      struct rlimit raised = rl;
      raised.rlim_cur = rl.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    }
    b.soft_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
    b.hard_limit = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max;
  } else {
    b.soft_limit = b.hard_limit = 1024;  // the common default; stay conservative
  }
  b.reserved = ReservedFds(http_connections);
  const uint64_t for_clients = b.soft_limit > b.reserved ? b.soft_limit - b.reserved : 0;
  b.grpc_connections = std::max<uint64_t>(1, std::min(max_connections, for_clients));
  return b;
}

std::string FdBudget::Describe(uint64_t requested_connections) const {
  std::string s = "file descriptors: limit " + std::to_string(soft_limit) + " (hard " +
                  std::to_string(hard_limit) + "), " + std::to_string(reserved) +
                  " reserved for the WAL, Kafka, HTTP and Bruce clients; at most " +
                  std::to_string(grpc_connections) + " gRPC connections";
  if (grpc_connections < requested_connections) {
    s += " (--max-connections " + std::to_string(requested_connections) +
         " lowered to fit the limit; raise LimitNOFILE / ulimit -n)";
  }
  return s;
}

}  // namespace kspool::agent
