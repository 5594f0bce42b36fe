#include "agent/validate/request_validator.h"

#include <google/protobuf/stubs/common.h>

#include <algorithm>
#include <string>

#include "absl/strings/escaping.h"

namespace kspool::agent {
namespace {

using kspool::v1::wire::Message;

absl::Status Bad(std::string_view field, const std::string& what) {
  return absl::InvalidArgumentError(std::string(field) + ": " + what);
}

absl::Status InMessage(int index, const absl::Status& s) {
  return absl::InvalidArgumentError("message " + std::to_string(index) + ": " +
                                    std::string(s.message()));
}

// The same check protobuf applies to `string` fields when it parses them.
bool IsUtf8(std::string_view s) {
  return google::protobuf::internal::IsStructurallyValidUTF8(s.data(),
                                                             static_cast<int>(s.size()));
}

// A client-supplied text for an error message: escaped, and cut to a readable length.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out =
      "\"" + absl::Utf8SafeCEscape(absl::string_view(s.data(), std::min(s.size(), kMax))) + "\"";
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace

absl::Status ValidateClientTimestamp(int64_t ts, const RequestLimits& limits, int64_t now_ms) {
  if (ts < 0) {
    return Bad("timestamp_ms", std::to_string(ts) + " is before the Unix epoch");
  }
  // now_ms is a real clock reading and the limit at most 100 years: no overflow.
  const int64_t latest = now_ms + static_cast<int64_t>(limits.max_future_timestamp_ms);
  if (ts > latest) {
    return Bad("timestamp_ms", std::to_string(ts) + " is more than --max-future-timestamp (" +
                                   std::to_string(limits.max_future_timestamp_ms) +
                                   " ms) ahead of the agent's clock (" + std::to_string(now_ms) +
                                   ")");
  }
  return absl::OkStatus();
}

absl::Status ValidateTopicName(std::string_view topic) {
  if (topic.empty()) return absl::InvalidArgumentError("topic is empty");
  if (!IsUtf8(topic)) return absl::InvalidArgumentError("not valid UTF-8");
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

absl::Status ValidateMessageBody(const Message& m, const RequestLimits& limits, int64_t now_ms) {
  if (m.has_timestamp_ms()) {
    if (absl::Status s = ValidateClientTimestamp(m.timestamp_ms(), limits, now_ms); !s.ok()) return s;
  }
  if (static_cast<uint64_t>(m.headers_size()) > limits.max_headers) {
    return Bad("headers", std::to_string(m.headers_size()) + " headers; --max-headers is " +
                              std::to_string(limits.max_headers));
  }
  if (m.value().size() > limits.max_message_bytes) {
    return Bad("value", std::to_string(m.value().size()) + " bytes exceeds --max-message-bytes " +
                            std::to_string(limits.max_message_bytes));
  }
  uint64_t size = m.value().size() + (m.has_key() ? m.key().size() : 0);
  for (int h = 0; h < m.headers_size(); ++h) {
    const std::string& key = m.headers(h).key();
    const std::string field = "headers[" + std::to_string(h) + "].key";
    if (key.empty()) return Bad(field, "is empty");
    if (!IsUtf8(key)) return Bad(field, "not valid UTF-8");
    if (key.compare(0, kReservedHeaderPrefix.size(), kReservedHeaderPrefix) == 0) {
      return Bad(field, Quote(key) + ": headers starting with \"kspool.\" are reserved for the agent");
    }
    size += key.size() + m.headers(h).value().size();
  }
  if (size > limits.max_message_bytes) {
    return Bad("message", std::to_string(size) +
                              " bytes (key + value + headers) exceeds --max-message-bytes " +
                              std::to_string(limits.max_message_bytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateSendRequest(const kspool::v1::wire::SendRequest& request,
                                 const RequestLimits& limits, int64_t now_ms) {
  const int n = request.messages_size();
  if (n == 0) return absl::InvalidArgumentError("request has no messages");
  if (static_cast<uint64_t>(n) > limits.max_batch_messages) {
    return absl::InvalidArgumentError("request has " + std::to_string(n) +
                                      " messages; --max-batch-messages is " +
                                      std::to_string(limits.max_batch_messages));
  }
  for (int i = 0; i < n; ++i) {
    const Message& m = request.messages(i);
    if (absl::Status s = ValidateTopicName(m.topic()); !s.ok()) {
      return InMessage(i, Bad("topic", std::string(s.message())));
    }
    if (m.has_partition() && m.partition() < -1) {
      return InMessage(i, Bad("partition", std::to_string(m.partition()) + " is below -1"));
    }
    if (absl::Status s = ValidateMessageBody(m, limits, now_ms); !s.ok()) return InMessage(i, s);
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
