// BruceCodec: the decoder of Bruce's and Dory's binary input format (their
// doc/sending_messages.md): AnyPartition (ApiKey 256) and PartitionKey (ApiKey 257)
// messages, ApiVersion 0, every integer big-endian. Pure functions over bytes: no I/O,
// no allocation beyond error texts, so it is fuzzed on its own (tests/fuzz).
// Errors are absl::Status whose payload names the rejection reason (BruceRejectReason),
// the label of kspool_bruce_rejected_total and of the discard report's list.
// Thread safety: stateless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace kspool::agent {

inline constexpr int16_t kBruceAnyPartition = 256;
inline constexpr int16_t kBrucePartitionKey = 257;
// Size + ApiKey + ApiVersion.
inline constexpr size_t kBruceGenericHeaderBytes = 8;
// The whole message without topic, key and value.
inline constexpr size_t kBruceAnyPartitionOverhead = 28;
inline constexpr size_t kBrucePartitionKeyOverhead = 32;
// Default --bruce-max-message-bytes per transport (Bruce's datagram limit, Dory's stream one).
inline constexpr size_t kBruceDefaultMaxDatagramBytes = 64 << 10;
inline constexpr size_t kBruceDefaultMaxStreamBytes = 2 << 20;

enum class BruceReject {
  kMalformed,
  kUnsupportedApiKey,
  kUnsupportedVersion,
  kBadTopic,
  kTooLong,
  kUncleanDisconnect,
};
inline constexpr BruceReject kAllBruceRejects[] = {
    BruceReject::kMalformed, BruceReject::kUnsupportedApiKey, BruceReject::kUnsupportedVersion,
    BruceReject::kBadTopic,  BruceReject::kTooLong,           BruceReject::kUncleanDisconnect};

// "malformed", "unsupported_api_key", ...: the metric label and report name.
std::string_view BruceRejectName(BruceReject reason);

// An error carrying `reason` (INVALID_ARGUMENT; UNIMPLEMENTED for an unsupported ApiKey or
// version), and the reason read back from such an error (kMalformed for any other).
absl::Status BruceError(BruceReject reason, std::string_view message);
BruceReject BruceRejectReason(const absl::Status& status);

// One decoded message; the views point into the bytes given to DecodeBruceMessage.
struct BruceMessage {
  std::optional<int32_t> partition_key;  // set for PartitionKey messages
  std::string_view topic;
  int64_t timestamp_ms = 0;
  std::string_view key;  // empty: no key
  std::string_view value;
};

// Decodes exactly one message that fills `bytes` (a datagram, or one framed stream
// message). Larger than `max_bytes`: too_long. The topic must follow Kafka's naming rules
// (bad_topic); Flags must be 0, sizes non-negative and consistent, and the value must end
// exactly at the end (malformed).
[[nodiscard]] absl::StatusOr<BruceMessage> DecodeBruceMessage(std::string_view bytes,
                                                              size_t max_bytes);

// Stream framing: the Size field at the front of `prefix` (at least 4 bytes). Below the
// generic header (8 bytes): malformed; above `max_bytes`: too_long. Either way the
// stream cannot be followed further.
[[nodiscard]] absl::StatusOr<size_t> BruceFrameSize(std::string_view prefix, size_t max_bytes);

// The partition of a PartitionKey message: the key as an unsigned 32-bit number modulo
// the topic's partition count (partitions sorted by id), as Bruce and Dory choose it.
int32_t BrucePartitionFor(int32_t partition_key, int partition_count);

}  // namespace kspool::agent
