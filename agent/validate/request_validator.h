// Validates a Send request before anything of it is written. The first problem found is
// returned as INVALID_ARGUMENT naming the message index and the field (and the header
// index for a header); a request is accepted whole or rejected whole.
// Requests arrive as the internal wire mirror (proto/kspool/v1/spool_wire.proto), whose
// `string` fields are `bytes`: UTF-8 is checked here, so that a bad field is named
// instead of the whole request failing to parse.
// Thread safety: stateless.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "agent/validate/kafka_limits.h"
#include "kspool/v1/spool_wire.pb.h"

namespace kspool::agent {

struct RequestLimits {
  uint64_t max_message_bytes = kDefaultMaxMessageBytes;
  uint64_t max_batch_messages = 10000;
  uint64_t max_headers = kHeadersBudgeted;  // per message
  // A client timestamp may be at most this far ahead of the agent's wall clock.
  uint64_t max_future_timestamp_ms = 3'600'000;
};

// Header keys with this prefix are the agent's (kspool.seq, kspool.agent,
// kspool.heartbeat); clients may not send them.
inline constexpr std::string_view kReservedHeaderPrefix = "kspool.";

// Kafka's topic rules: 1-249 characters of [a-zA-Z0-9._-], and not "." or "..".
absl::Status ValidateTopicName(std::string_view topic);

// A client timestamp: in [0, now_ms + limits.max_future_timestamp_ms]. The error reads
// "timestamp_ms: <what>".
absl::Status ValidateClientTimestamp(int64_t timestamp_ms, const RequestLimits& limits,
                                     int64_t now_ms);

// One message, all fields but the topic and the partition (which a Broadcast
// replaces). The error reads "<field>: <what>". `now_ms`: the agent's wall clock.
absl::Status ValidateMessageBody(const kspool::v1::wire::Message& m, const RequestLimits& limits,
                                 int64_t now_ms);

// The whole request; errors about one message read "message <i>: <field>: <what>".
absl::Status ValidateSendRequest(const kspool::v1::wire::SendRequest& request,
                                 const RequestLimits& limits, int64_t now_ms);

}  // namespace kspool::agent
