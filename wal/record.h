// The WAL record codec: the one encoder and decoder of the bytes stored under a
// sequence number in column family `log`. FORMAT.md is its specification. The agent and
// kspoolctl both use this header; nothing else parses records.
// Thread safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kspool::wal {

inline constexpr uint8_t kRecordVersion = 1;
// version (1) + crc32c (4) + receive time (8).
inline constexpr size_t kRecordHeaderSize = 13;

struct Header {
  std::string key;
  std::string value;
  bool operator==(const Header& o) const { return key == o.key && value == o.value; }
};

// A message as stored. `partition` -1 means "let the partitioner choose".
struct Record {
  std::string topic;
  int32_t partition = -1;
  std::optional<std::string> key;
  std::string value;
  std::vector<Header> headers;
  std::optional<int64_t> client_timestamp_ms;
  int64_t receive_time_ms = 0;
};

// A borrowed view of a message to encode, so callers can encode straight from their
// own buffers (e.g. a protobuf request) without an intermediate copy.
struct RecordView {
  std::string_view topic;
  int32_t partition = -1;
  std::optional<std::string_view> key;
  std::string_view value;
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  std::optional<int64_t> client_timestamp_ms;
};

// A view of a decoded record, to encode it again (valid while `r` is).
RecordView ViewOf(const Record& r);

// Encodes `r` with its receive time left unset; SealRecord must run before the bytes
// are stored. Split so that appenders encode in parallel and the group-commit committer
// only stamps the receive time it assigns.
std::string EncodeUnsealed(const RecordView& r);
// Writes the receive time and the checksum into an EncodeUnsealed() buffer.
void SealRecord(int64_t receive_time_ms, std::string* encoded);
// Convenience for tests and tools: encode and seal in one step.
std::string EncodeRecord(const Record& r);

// Decodes a stored record. DATA_LOSS on a checksum mismatch or truncated bytes;
// FAILED_PRECONDITION on a version this build does not know.
absl::StatusOr<Record> DecodeRecord(std::string_view bytes);
// Reads only the receive time, for commit-point queries; checks the version only.
absl::StatusOr<int64_t> PeekReceiveTime(std::string_view bytes);

// Best effort for a record that fails to decode: the topic, if the bytes still hold a
// plausible one (so a quarantined record is counted under its topic), else "".
std::string SalvageTopic(std::string_view bytes);
// Where a record goes, read from its first bytes without a copy and without checking the
// checksum: for a reader that picks entries before decoding them. Points into `bytes`;
// topic "" when the bytes do not hold a plausible one.
struct RecordRouting {
  std::string_view topic;
  int32_t partition = -1;  // explicit partition, -1: the partitioner chooses
  std::optional<std::string_view> key;
};
RecordRouting PeekRouting(std::string_view bytes);
std::string_view PeekTopic(std::string_view bytes);

uint32_t Crc32c(const char* data, size_t n);

// --- Batch records (format version 2, FORMAT.md "Batch records") ---------------------
// Several consecutive messages of one topic under one key: BE u64 *last* sequence number
// + BE u32 count (12 bytes; a version-1 key is the 8-byte sequence number alone, its own
// last). Keyed by the last number, a forward seek to any sequence number lands on the
// record that holds it, and the numbers a record holds are known without reading it.
// The value shares the version-1 header (version, CRC-32C, receive time; SealRecord()
// seals both), then the count, the topic once, each message's body length, and the
// bodies: a version-1 body without its topic. A message's accounted size (ledger,
// limits) is the size of its version-1 record, so both versions count the same bytes.
inline constexpr uint8_t kBatchRecordVersion = 2;
inline constexpr uint32_t kMaxBatchMessages = 65536;
// The writer starts a new record rather than grow one past this many bytes of bodies.
inline constexpr size_t kBatchRecordTargetBytes = 64 * 1024;

// The key of the record holding [first_seq, first_seq + count).
std::string BatchKey(uint64_t first_seq, uint32_t count);
// The sequence numbers a `log` key covers: [first, first + count). A version-1 key has
// count 1. nullopt for a key of another length, a count of 0, or one beyond its last.
struct LogKey {
  uint64_t first_seq = 0;
  uint32_t count = 0;
  bool batch = false;  // a version-2 key
};
std::optional<LogKey> ParseLogKey(std::string_view key);

// Builds one unsealed batch record from messages of one topic, in sequence order.
class BatchRecordBuilder {
 public:
  explicit BatchRecordBuilder(std::string_view topic) : topic_(topic) {}
  // `m.topic` must be the builder's topic.
  void Add(const RecordView& m);
  uint32_t count() const { return static_cast<uint32_t>(lengths_.size()); }
  size_t body_bytes() const { return bodies_.size(); }
  std::string_view topic() const { return topic_; }
  // The accounted (version-1) size of the i-th message added.
  size_t MessageSize(size_t i) const;
  // The record, to be sealed by SealRecord() before it is stored. Once: it hands over
  // the builder's buffer (count() and MessageSize() still answer).
  std::string Finish();

 private:
  size_t IndexRoom(size_t count) const;

  std::string topic_;
  std::string bodies_;           // the messages' bodies, back to back
  std::vector<size_t> lengths_;  // each body's length
};

// A stored batch record, checked (version, checksum, layout) and split into its
// messages without copying: views into the bytes given to ParseBatch().
struct BatchView {
  int64_t receive_time_ms = 0;
  std::string_view topic;
  std::vector<std::string_view> bodies;
  size_t MessageSize(size_t i) const;
  RecordRouting Routing(size_t i) const;
  // The i-th message as a Record (with the topic and receive time).
  absl::StatusOr<Record> Decode(size_t i) const;
};
// DATA_LOSS on a checksum mismatch, a malformed layout, or a count other than
// `expected_count` (the key's); FAILED_PRECONDITION on an unknown version.
absl::StatusOr<BatchView> ParseBatch(std::string_view bytes, uint32_t expected_count);
// The layout alone, the checksum not checked: for salvaging a record that failed
// ParseBatch() with a checksum mismatch. Its messages are not to be trusted.
absl::StatusOr<BatchView> ParseBatchLayout(std::string_view bytes, uint32_t expected_count);
// Message `i` of an unreadable batch record (`layout` from ParseBatchLayout(record)) in
// the version-1 layout, with the batch record's checksum, so it still fails to decode:
// what its dead letter keeps. Its size is the message's accounted size, and
// SalvageTopic() reads the topic from it as from a version-1 record.
std::string UnreadableAsVersion1(const BatchView& layout, size_t i, std::string_view record);

}  // namespace kspool::wal
