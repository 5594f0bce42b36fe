// kspool-bench's modes for the peer benchmark (tools/bench-peers.sh), each printing one
// JSON object on stdout and returning the process's exit status: feed one TCP connection
// (tcp_feed.h), count deliveries in Kafka (kafka_count.h), measure the raw RocksDB
// ceiling alone (ceiling.h), the Kafka client's (kafka_ceiling.h) and gRPC's
// (grpc_ceiling.h). Not thread-safe; called once
// from main.
#pragma once

#include <cstdint>
#include <string>

#include "tools/bench/load.h"
#include "tools/bench/tcp_feed.h"

namespace kspool::bench {

// --tcp-lines / --bruce-tcp: one connection for o.duration_s.
int RunTcp(const std::string& address, TcpFeedFormat format, const LoadOptions& o);
// --kafka-offsets (wait_from < 0): the sum of bench-0..topics-1's high watermarks;
// --kafka-wait: WaitForKafka from wait_from until expect more arrived.
int RunKafkaCount(const std::string& brokers, int topics, int64_t wait_from, uint64_t expect,
                  int pid, double idle_s, double max_wait_s);
// --ceiling-only: RocksDB alone in `dir` (made if missing), `batch` messages of `size`
// bytes per synced write for `seconds`.
int RunCeilingOnly(const std::string& dir, int batch, int size, double seconds);
// --kafka-ceiling: the Kafka client alone (kafka_ceiling.h), `mode` "kspool" or "plain".
int RunKafkaCeiling(const std::string& brokers, const std::string& mode, int size, double seconds);
// --grpc-ceiling: gRPC alone (grpc_ceiling.h) under the load `o` describes.
int RunGrpcCeiling(const LoadOptions& o);

}  // namespace kspool::bench
