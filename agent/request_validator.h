// Validates a Send request before anything of it is written. The first problem found is
// returned as INVALID_ARGUMENT naming the message index and the field; a request is
// accepted whole or rejected whole. Thread safety: stateless after construction.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "kspool/v1/spool.pb.h"

namespace kspool::agent {

struct RequestLimits {
  uint64_t max_message_bytes = 1 << 20;
  uint64_t max_batch_messages = 10000;
};

// Kafka's topic rules: 1-249 characters of [a-zA-Z0-9._-], and not "." or "..".
absl::Status ValidateTopicName(std::string_view topic);

absl::Status ValidateSendRequest(const kspool::v1::SendRequest& request,
                                 const RequestLimits& limits);

}  // namespace kspool::agent
