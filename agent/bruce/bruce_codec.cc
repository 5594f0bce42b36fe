#include "agent/bruce/bruce_codec.h"

#include <string>

#include "absl/strings/cord.h"
#include "agent/validate/request_validator.h"

namespace kspool::agent {
namespace {

constexpr char kReasonPayload[] = "kspool.bruce.reject_reason";

// This absl's string_view is its own type, not std::string_view.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// A big-endian reader that never reads past the end: a short read sets `short_`.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  uint64_t Uint(size_t n) {
    if (bytes_.size() - pos_ < n) {
      short_ = true;
      pos_ = bytes_.size();
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(bytes_[pos_ + i]);
    pos_ += n;
    return v;
  }
  int16_t I16() { return static_cast<int16_t>(Uint(2)); }
  int32_t I32() { return static_cast<int32_t>(Uint(4)); }
  int64_t I64() { return static_cast<int64_t>(Uint(8)); }
  // `n` bytes; a negative or too large `n` is a short read.
  std::string_view Bytes(int64_t n) {
    if (n < 0 || static_cast<uint64_t>(n) > bytes_.size() - pos_) {
      short_ = true;
      pos_ = bytes_.size();
      return {};
    }
    std::string_view v = bytes_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return v;
  }
  bool short_read() const { return short_; }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  bool short_ = false;
};

absl::Status Malformed(const std::string& what) {
  return BruceError(BruceReject::kMalformed, what);
}

}  // namespace

std::string_view BruceRejectName(BruceReject reason) {
  switch (reason) {
    case BruceReject::kMalformed:
      return "malformed";
    case BruceReject::kUnsupportedApiKey:
      return "unsupported_api_key";
    case BruceReject::kUnsupportedVersion:
      return "unsupported_version";
    case BruceReject::kBadTopic:
      return "bad_topic";
    case BruceReject::kTooLong:
      return "too_long";
    case BruceReject::kUncleanDisconnect:
      return "unclean_disconnect";
  }
  return "malformed";
}

absl::Status BruceError(BruceReject reason, std::string_view message) {
  const bool unsupported =
      reason == BruceReject::kUnsupportedApiKey || reason == BruceReject::kUnsupportedVersion;
  absl::Status s(
      unsupported ? absl::StatusCode::kUnimplemented : absl::StatusCode::kInvalidArgument,
      Absl(message));
  s.SetPayload(kReasonPayload, absl::Cord(Absl(BruceRejectName(reason))));
  return s;
}

BruceReject BruceRejectReason(const absl::Status& status) {
  auto p = status.GetPayload(kReasonPayload);
  if (p) {
    for (BruceReject r : kAllBruceRejects) {
      if (*p == Absl(BruceRejectName(r))) return r;
    }
  }
  return BruceReject::kMalformed;
}

absl::StatusOr<size_t> BruceFrameSize(std::string_view prefix, size_t max_bytes) {
  if (prefix.size() < 4) return Malformed("fewer than 4 bytes for the Size field");
  const int32_t size = Reader(prefix).I32();
  if (size < static_cast<int32_t>(kBruceGenericHeaderBytes)) {
    return Malformed("Size " + std::to_string(size) + " is below the 8-byte generic header");
  }
  if (static_cast<uint64_t>(size) > max_bytes) {
    return BruceError(BruceReject::kTooLong, "Size " + std::to_string(size) +
                                                 " exceeds --bruce-max-message-bytes " +
                                                 std::to_string(max_bytes));
  }
  return static_cast<size_t>(size);
}

absl::StatusOr<BruceMessage> DecodeBruceMessage(std::string_view bytes, size_t max_bytes) {
  if (bytes.size() > max_bytes) {
    return BruceError(BruceReject::kTooLong, std::to_string(bytes.size()) +
                                                 " bytes exceed --bruce-max-message-bytes " +
                                                 std::to_string(max_bytes));
  }
  Reader r(bytes);
  const int32_t size = r.I32();
  const int16_t api_key = r.I16();
  const int16_t api_version = r.I16();
  if (r.short_read()) {
    return Malformed(std::to_string(bytes.size()) + " bytes: shorter than the 8-byte header");
  }
  if (size < 0 || static_cast<size_t>(size) != bytes.size()) {
    return Malformed("Size field says " + std::to_string(size) + " bytes, the message has " +
                     std::to_string(bytes.size()));
  }
  if (api_key != kBruceAnyPartition && api_key != kBrucePartitionKey) {
    return BruceError(BruceReject::kUnsupportedApiKey,
                      "ApiKey " + std::to_string(api_key) +
                          " (256 AnyPartition and 257 PartitionKey are supported)");
  }
  if (api_version != 0) {
    return BruceError(BruceReject::kUnsupportedVersion,
                      "ApiVersion " + std::to_string(api_version) + " of ApiKey " +
                          std::to_string(api_key) + " (only 0 is supported)");
  }
  BruceMessage m;
  const int16_t flags = r.I16();
  if (api_key == kBrucePartitionKey) m.partition_key = r.I32();
  const int16_t topic_size = r.I16();
  if (r.short_read()) return Malformed("message ends inside the fixed fields");
  if (flags != 0) return Malformed("Flags is " + std::to_string(flags) + ", must be 0");
  if (topic_size <= 0) {
    return Malformed("TopicSize is " + std::to_string(topic_size) + ", must be above 0");
  }
  m.topic = r.Bytes(topic_size);
  m.timestamp_ms = r.I64();
  const int32_t key_size = r.I32();
  if (key_size < 0 && !r.short_read()) {
    return Malformed("KeySize is " + std::to_string(key_size) + ", must be at least 0");
  }
  m.key = r.Bytes(key_size);
  const int32_t value_size = r.I32();
  if (value_size < 0 && !r.short_read()) {
    return Malformed("ValueSize is " + std::to_string(value_size) + ", must be at least 0");
  }
  m.value = r.Bytes(value_size);
  if (r.short_read()) return Malformed("a size field points past the end of the message");
  if (r.remaining() != 0) {
    return Malformed(std::to_string(r.remaining()) +
                     " bytes after the value (it must end the message)");
  }
  if (absl::Status s = ValidateTopicName(m.topic); !s.ok()) {
    return BruceError(BruceReject::kBadTopic, "topic: " + std::string(s.message()));
  }
  return m;
}

int32_t BrucePartitionFor(int32_t partition_key, int partition_count) {
  if (partition_count <= 0) return -1;
  return static_cast<int32_t>(static_cast<uint32_t>(partition_key) %
                              static_cast<uint32_t>(partition_count));
}

}  // namespace kspool::agent
