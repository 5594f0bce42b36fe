// What the unary and the streaming load generators share: one channel per client,
// building a request of incompressible, tagged values, naming failures, and checking a
// response against its
// request (one sequence per message, and with WAIT_FOR_KAFKA one DeliveryStatus per
// message, in request order, DELIVERED at a partition and offset).
#pragma once

#include <grpcpp/security/credentials.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kspool/v1/spool.grpc.pb.h"

namespace kspool::bench {

struct LoadOptions;

// Plaintext, or TLS with options.tls_* (files read once here).
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const LoadOptions& options);

// One stub per client, each on its own channel to options.agent.
std::vector<std::unique_ptr<kspool::v1::Spool::Stub>> MakeStubs(const LoadOptions& options);

// Request n of client `client`: options.batch messages of options.size random bytes.
kspool::v1::SendRequest MakeRequest(const LoadOptions& options, int client, uint64_t n);

// "RESOURCE_EXHAUSTED", "UNAVAILABLE", ... for a gRPC status code number.
const char* CodeName(int code);

// What one OK response says, checked against its request's topics.
struct ResponseCheck {
  uint64_t good = 0;  // messages with a sequence (and a DELIVERED status when asked)
  std::map<std::string, uint64_t> errors;  // messages failing a check, by check
  int64_t last_delivered_ms = -1;          // latest delivered_time_ms (WAIT_FOR_KAFKA)
};

ResponseCheck CheckResponse(const kspool::v1::SendRequest& request,
                            const kspool::v1::SendResponse& response, bool wait_for_kafka);

}  // namespace kspool::bench
