#include "agent/request_validator.h"

#include <string>

namespace kspool::agent {
namespace {

absl::Status Bad(int index, std::string_view field, const std::string& what) {
  return absl::InvalidArgumentError("message " + std::to_string(index) + ": " +
                                    std::string(field) + ": " + what);
}

}  // namespace

absl::Status ValidateTopicName(std::string_view topic) {
  if (topic.empty()) return absl::InvalidArgumentError("topic is empty");
  if (topic.size() > 249) {
    return absl::InvalidArgumentError("topic is " + std::to_string(topic.size()) +
                                      " characters; Kafka allows at most 249");
  }
  if (topic == "." || topic == "..") {
    return absl::InvalidArgumentError("topic may not be \".\" or \"..\"");
  }
  for (char ch : topic) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          "topic contains a character outside [a-zA-Z0-9._-] (byte 0x" +
          std::string(1, "0123456789abcdef"[(static_cast<uint8_t>(ch) >> 4)]) +
          std::string(1, "0123456789abcdef"[static_cast<uint8_t>(ch) & 15]) + ")");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSendRequest(const kspool::v1::SendRequest& request,
                                 const RequestLimits& limits) {
  const int n = request.messages_size();
  if (n == 0) return absl::InvalidArgumentError("request has no messages");
  if (static_cast<uint64_t>(n) > limits.max_batch_messages) {
    return absl::InvalidArgumentError("request has " + std::to_string(n) +
                                      " messages; --max-batch-messages is " +
                                      std::to_string(limits.max_batch_messages));
  }
  for (int i = 0; i < n; ++i) {
    const kspool::v1::Message& m = request.messages(i);
    if (absl::Status s = ValidateTopicName(m.topic()); !s.ok()) {
      return Bad(i, "topic", std::string(s.message()));
    }
    if (m.has_partition() && m.partition() < -1) {
      return Bad(i, "partition", std::to_string(m.partition()) + " is below -1");
    }
    uint64_t size = m.value().size() + (m.has_key() ? m.key().size() : 0);
    if (m.value().size() > limits.max_message_bytes) {
      return Bad(i, "value", std::to_string(m.value().size()) +
                                 " bytes exceeds --max-message-bytes " +
                                 std::to_string(limits.max_message_bytes));
    }
    for (int h = 0; h < m.headers_size(); ++h) {
      if (m.headers(h).key().empty()) {
        return Bad(i, "headers[" + std::to_string(h) + "].key", "is empty");
      }
      size += m.headers(h).key().size() + m.headers(h).value().size();
    }
    if (size > limits.max_message_bytes) {
      return Bad(i, "message", std::to_string(size) +
                                   " bytes (key + value + headers) exceeds --max-message-bytes " +
                                   std::to_string(limits.max_message_bytes));
    }
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
