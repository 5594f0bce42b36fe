// Batch records (format version 2): the key that names a record's sequence numbers, the
// builder the appender uses, and the parser that checks a stored record and splits it
// into its messages without copying. FORMAT.md, "Batch records", is the specification.
#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "wal/coding.h"
#include "wal/record.h"
#include "wal/record_body.h"

namespace kspool::wal {
namespace {

size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// The size of the version-1 record of a message with this body and topic.
size_t AccountedSize(std::string_view topic, size_t body_size) {
  return kRecordHeaderSize + VarintLength(topic.size()) + topic.size() + body_size;
}

uint64_t GetBigEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

std::string BatchKey(uint64_t first_seq, uint32_t count) {
  const uint64_t last = first_seq + count - 1;
  std::string key(12, '\0');
  for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(last >> (8 * (7 - i)));
  for (int i = 0; i < 4; ++i) key[8 + i] = static_cast<char>(count >> (8 * (3 - i)));
  return key;
}

std::optional<LogKey> ParseLogKey(std::string_view key) {
  if (key.size() == 8) return LogKey{GetBigEndian(key.data(), 8), 1, false};
  if (key.size() != 12) return std::nullopt;
  const uint64_t last = GetBigEndian(key.data(), 8);
  const auto count = static_cast<uint32_t>(GetBigEndian(key.data() + 8, 4));
  if (count == 0 || count - 1 > last) return std::nullopt;
  return LogKey{last - (count - 1), count, true};
}

size_t BatchRecordBuilder::IndexRoom(size_t count) const {
  // Header, count and topic varints, the topic, each length (a varint of at most 10).
  return kRecordHeaderSize + 20 + topic_.size() + 10 * count;
}

void BatchRecordBuilder::Add(const RecordView& m) {
  // Room for this body and for the index Finish() puts in front of the bodies, made
  // before the body is written: a large value is copied once, and Finish() moves the
  // bodies within this buffer instead of into a second one.
  size_t estimate = 32 + m.value.size() + (m.key ? m.key->size() : 0);
  for (const auto& [k, v] : m.headers) estimate += 20 + k.size() + v.size();
  const size_t want = bodies_.size() + estimate + IndexRoom(lengths_.size() + 1);
  if (bodies_.capacity() < want) bodies_.reserve(std::max(want, 2 * bodies_.capacity()));
  const size_t start = bodies_.size();
  body::PutPrefix(&bodies_, m);
  body::PutTail(&bodies_, m);
  lengths_.push_back(bodies_.size() - start);
}

size_t BatchRecordBuilder::MessageSize(size_t i) const {
  return AccountedSize(topic_, lengths_[i]);
}

std::string BatchRecordBuilder::Finish() {
  std::string index;
  index.reserve(IndexRoom(lengths_.size()));
  index.push_back(static_cast<char>(kBatchRecordVersion));
  index.append(12, '\0');  // crc32c and receive time, filled by SealRecord
  coding::PutVarint(&index, lengths_.size());
  coding::PutBytes(&index, topic_);
  for (size_t n : lengths_) coding::PutVarint(&index, n);
  bodies_.insert(0, index);  // within the capacity Add() reserved: no second buffer
  return std::move(bodies_);
}

size_t BatchView::MessageSize(size_t i) const { return AccountedSize(topic, bodies[i].size()); }

RecordRouting BatchView::Routing(size_t i) const {
  RecordRouting r;
  coding::Reader in(bodies[i]);
  Record prefix;
  uint8_t flags;
  if (!body::GetPrefix(&in, &flags, &prefix)) return r;
  std::string_view key;
  if ((flags & body::kFlagKey) && !in.BytesView(&key)) return r;
  r.topic = topic;
  r.partition = prefix.partition;
  if (flags & body::kFlagKey) r.key = key;
  return r;
}

absl::StatusOr<Record> BatchView::Decode(size_t i) const {
  Record r;
  coding::Reader in(bodies[i]);
  uint8_t flags;
  if (!body::GetPrefix(&in, &flags, &r) || !body::GetTail(&in, flags, &r)) {
    return absl::DataLossError("batch record: message " + std::to_string(i) + " malformed");
  }
  r.topic.assign(topic);
  r.receive_time_ms = receive_time_ms;
  return r;
}

absl::StatusOr<BatchView> ParseBatch(std::string_view bytes, uint32_t expected_count) {
  if (bytes.size() < kRecordHeaderSize) {
    return absl::DataLossError("batch record truncated: " + std::to_string(bytes.size()) +
                               " bytes");
  }
  const uint8_t version = static_cast<uint8_t>(bytes[0]);
  if (version != kBatchRecordVersion) {
    return absl::FailedPreconditionError("batch record version " + std::to_string(version) +
                                         " is not supported (this build reads version " +
                                         std::to_string(kBatchRecordVersion) + ")");
  }
  if (coding::GetFixed32(bytes.data() + 1) != Crc32c(bytes.data() + 5, bytes.size() - 5)) {
    return absl::DataLossError("batch record checksum mismatch");
  }
  return ParseBatchLayout(bytes, expected_count);
}

absl::StatusOr<BatchView> ParseBatchLayout(std::string_view bytes, uint32_t expected_count) {
  if (bytes.size() < kRecordHeaderSize) {
    return absl::DataLossError("batch record truncated: " + std::to_string(bytes.size()) +
                               " bytes");
  }
  BatchView v;
  v.receive_time_ms = static_cast<int64_t>(coding::GetFixed64(bytes.data() + 5));
  coding::Reader in(bytes.substr(kRecordHeaderSize));
  uint64_t count;
  if (!in.Varint(&count) || count != expected_count || count == 0 || count > kMaxBatchMessages ||
      !in.BytesView(&v.topic)) {
    return absl::DataLossError("batch record malformed: count or topic (key says " +
                               std::to_string(expected_count) + " messages)");
  }
  std::vector<uint64_t> sizes(count);
  uint64_t total = 0;
  for (uint64_t& n : sizes) {
    if (!in.Varint(&n) || n > bytes.size()) {
      return absl::DataLossError("batch record malformed: message lengths");
    }
    total += n;
  }
  std::string_view rest = in.rest();
  if (total != rest.size()) {
    return absl::DataLossError("batch record malformed: the messages take " +
                               std::to_string(total) + " bytes, the record holds " +
                               std::to_string(rest.size()));
  }
  v.bodies.reserve(count);
  for (uint64_t n : sizes) {
    v.bodies.push_back(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  return v;
}

std::string UnreadableAsVersion1(const BatchView& layout, size_t i, std::string_view record) {
  const std::string_view body = layout.bodies[i];
  coding::Reader in(body);
  uint8_t flags;
  Record ignored;
  const size_t prefix = body::GetPrefix(&in, &flags, &ignored) ? body.size() - in.rest().size() : 0;
  std::string out;
  out.reserve(layout.MessageSize(i));
  out.push_back(static_cast<char>(kRecordVersion));
  out.append(record.substr(1, 12));  // the batch record's checksum and receive time
  out.append(body.substr(0, prefix));
  coding::PutBytes(&out, layout.topic);
  out.append(body.substr(prefix));
  // The batch's checksum was computed over other bytes; in the one case in 2^32 where it
  // matches these, break it, so that the message stays unreadable as its record was.
  if (coding::GetFixed32(out.data() + 1) == Crc32c(out.data() + 5, out.size() - 5)) out[1] ^= 1;
  return out;
}

}  // namespace kspool::wal
