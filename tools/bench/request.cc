#include "tools/bench/request.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tools/bench/load.h"
#include "tools/common/client_tls.h"

namespace kspool::bench {
namespace {

// Fills `v` with incompressible bytes (LZ4 in RocksDB and librdkafka must not shrink
// the load), 8 at a time from a xorshift generator.
void FillRandom(std::string* v, uint64_t* state) {
  uint64_t x = *state;
  for (size_t i = 0; i < v->size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v->data() + i, &x, std::min<size_t>(8, v->size() - i));
  }
  *state = x;
}

}  // namespace

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const LoadOptions& o) {
  return tools::ClientChannelCredentials(o.tls_ca, o.tls_cert, o.tls_key);
}

std::vector<std::unique_ptr<kspool::v1::Spool::Stub>> MakeStubs(const LoadOptions& o) {
  std::vector<std::unique_ptr<kspool::v1::Spool::Stub>> stubs;
  const std::shared_ptr<grpc::ChannelCredentials> credentials = ChannelCredentials(o);
  for (int c = 0; c < o.clients; ++c) {
    stubs.push_back(kspool::v1::Spool::NewStub(grpc::CreateChannel(o.agent, credentials)));
  }
  return stubs;
}

kspool::v1::SendRequest MakeRequest(const LoadOptions& o, int client, uint64_t n) {
  kspool::v1::SendRequest req;
  static thread_local uint64_t rng = 0x9E3779B97F4A7C15ull * (client + 1);
  std::string value(static_cast<size_t>(o.size), 'x');
  for (int i = 0; i < o.batch; ++i) {
    auto* m = req.add_messages();
    m->set_topic("bench-" + std::to_string((client + i) % o.topics));
    FillRandom(&value, &rng);  // tagged below with who sent it
    std::string tag = std::to_string(client) + ":" + std::to_string(n) + ":" + std::to_string(i);
    value.replace(0, std::min(tag.size(), value.size()), tag.substr(0, value.size()));
    m->set_value(value);
    if (o.keys) m->set_key("k" + std::to_string((n * 31 + i) % 1024));
  }
  if (o.wait_for_kafka) req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  return req;
}

const char* CodeName(int code) {
  // grpc::StatusCode's names, by number (0 to 16).
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "OTHER";
}

ResponseCheck CheckResponse(const kspool::v1::SendRequest& request,
                            const kspool::v1::SendResponse& response, bool wait_for_kafka) {
  ResponseCheck c;
  const int n = request.messages_size();
  if (response.sequence_size() != n) {
    c.errors["SEQUENCE_COUNT"] += n;
    return c;
  }
  if (wait_for_kafka && response.deliveries_size() != n) {
    c.errors["DELIVERY_COUNT"] += n;
    return c;
  }
  for (int i = 0; i < n; ++i) {
    const uint64_t seq = response.sequence(i);
    if (i > 0 && seq <= response.sequence(i - 1)) {
      ++c.errors["SEQUENCE_ORDER"];
      continue;
    }
    if (!wait_for_kafka) {
      ++c.good;
      continue;
    }
    const kspool::v1::DeliveryStatus& d = response.deliveries(i);
    const char* bad = nullptr;
    if (d.sequence() != seq) {
      bad = "DELIVERY_SEQUENCE";
    } else if (d.state() != kspool::v1::DeliveryStatus::DELIVERED) {
      bad = d.state() == kspool::v1::DeliveryStatus::DISCARDED ? "DISCARDED" : "NOT_DELIVERED";
    } else if (d.topic() != request.messages(i).topic()) {
      bad = "DELIVERY_TOPIC";
    } else if (d.partition() < 0 || d.offset() < 0) {
      bad = "DELIVERY_POSITION";
    }
    if (bad) {
      ++c.errors[bad];
      continue;
    }
    ++c.good;
    c.last_delivered_ms = std::max(c.last_delivered_ms, d.delivered_time_ms());
  }
  return c;
}

}  // namespace kspool::bench
