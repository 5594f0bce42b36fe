// The fields of one message as both record versions store them (record.h; FORMAT.md):
// a version-1 record is header + prefix + topic + tail, a batch record's message body is
// prefix + tail (the topic is stored once per record). Internal to the codec.
#pragma once

#include <cstdint>
#include <string>

#include "wal/coding.h"
#include "wal/record.h"

namespace kspool::wal::body {

inline constexpr uint8_t kFlagKey = 1;
inline constexpr uint8_t kFlagClientTimestamp = 2;

// flags, the client timestamp when present, partition + 1.
inline void PutPrefix(std::string* out, const RecordView& r) {
  const uint8_t flags = (r.key ? kFlagKey : 0) | (r.client_timestamp_ms ? kFlagClientTimestamp : 0);
  out->push_back(static_cast<char>(flags));
  if (r.client_timestamp_ms) coding::PutFixed64(out, static_cast<uint64_t>(*r.client_timestamp_ms));
  // Partition is >= -1; stored +1 so it fits an unsigned varint.
  coding::PutVarint(out, static_cast<uint64_t>(static_cast<int64_t>(r.partition) + 1));
}

// The key when present, the value, the headers.
inline void PutTail(std::string* out, const RecordView& r) {
  if (r.key) coding::PutBytes(out, *r.key);
  coding::PutBytes(out, r.value);
  coding::PutVarint(out, r.headers.size());
  for (const auto& [k, v] : r.headers) {
    coding::PutBytes(out, k);
    coding::PutBytes(out, v);
  }
}

inline bool GetPrefix(coding::Reader* in, uint8_t* flags, Record* r) {
  if (!in->Byte(flags) || (*flags & ~(kFlagKey | kFlagClientTimestamp))) return false;
  if (*flags & kFlagClientTimestamp) {
    uint64_t ts;
    if (!in->Fixed64(&ts)) return false;
    r->client_timestamp_ms = static_cast<int64_t>(ts);
  }
  uint64_t partition;
  if (!in->Varint(&partition) || partition > 0x80000000ull) return false;
  r->partition = static_cast<int32_t>(static_cast<int64_t>(partition) - 1);
  return true;
}

// Reads the tail and checks that nothing follows it.
inline bool GetTail(coding::Reader* in, uint8_t flags, Record* r) {
  if (flags & kFlagKey) {
    r->key.emplace();
    if (!in->Bytes(&*r->key)) return false;
  }
  if (!in->Bytes(&r->value)) return false;
  uint64_t n;
  // Each header takes at least two bytes: a count beyond that is malformed.
  if (!in->Varint(&n) || n > in->rest().size() / 2) return false;
  r->headers.resize(n);
  for (auto& h : r->headers) {
    if (!in->Bytes(&h.key) || !in->Bytes(&h.value)) return false;
  }
  return in->done();
}

}  // namespace kspool::wal::body
