// LoadGenerator: the client side of kspool-bench. N clients, each with its own gRPC
// channel, send batches of messages to the agent on gRPC's callback API (no thread per
// client, so the generator takes little of the CPU it shares with the agent): closed
// loop (each client sends its next request when the last is answered) or open loop at
// a fixed total rate, where requests go out on schedule whether or not earlier ones
// were answered and latency is measured from each request's scheduled time, so a
// stalled agent cannot hide its queueing (no coordinated omission). Loopback only.
// With --stream, each client instead keeps K requests outstanding on one SendStream.
// Thread safety: RunLoad() from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kspool::bench {

struct LoadOptions {
  std::string agent;
  int clients = 8;
  int batch = 100;
  int size = 100;
  double duration_s = 10;
  uint64_t count = 0;  // total messages; 0: run for duration_s
  double rate = 0;     // total messages/s, open loop; 0: closed loop
  int topics = 1;
  bool keys = false;
  bool wait_for_kafka = false;  // every Send sets wait_for = WAIT_FOR_KAFKA
  bool stream = false;          // SendStream: one stream per client (RunStreamLoad)
  int in_flight = 32;           // stream: requests outstanding per stream
  // TLS to the agent (all empty: plaintext): the CA to trust, and the client
  // certificate and key for mTLS (the bench's identity for --acl).
  std::string tls_ca, tls_cert, tls_key;
};

struct LoadResult {
  uint64_t acked = 0;  // messages answered OK that passed every check
  uint64_t requests = 0;
  double seconds = 0;
  std::vector<double> latencies_ms;     // per successful request, sorted
  std::map<std::string, uint64_t> failures;  // requests, by gRPC status code name
  std::map<std::string, uint64_t> check_errors;  // messages of OK responses, by check
  // WAIT_FOR_KAFKA: per request, the agent's receive time to its last outcome (agent
  // clock, ms resolution): the part of the latency spent inside the agent and Kafka.
  std::vector<double> outcome_ms;  // sorted
  // Stream: responses whose first sequence was not above the previous response's last
  // (responses out of request order, or requests appended out of stream order).
  uint64_t sequence_regressions = 0;
  uint64_t streams_failed = 0;  // streams that ended with an error (then reopened)
};

// Runs the load; `progress` is called about once a second with the messages acked so far.
LoadResult RunLoad(const LoadOptions& options, const std::function<void(uint64_t)>& progress);
// The same with SendStream: options.clients streams, each keeping options.in_flight
// requests outstanding (duration only, closed loop).
LoadResult RunStreamLoad(const LoadOptions& options,
                         const std::function<void(uint64_t)>& progress);

double Percentile(const std::vector<double>& sorted, double p);

}  // namespace kspool::bench
