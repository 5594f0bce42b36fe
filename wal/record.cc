#include "wal/record.h"

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "wal/coding.h"
#include "wal/record_body.h"

namespace kspool::wal {
namespace {

using namespace coding;  // NOLINT: the codec primitives

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

absl::Status CheckHeader(std::string_view bytes) {
  if (bytes.size() < kRecordHeaderSize) {
    return absl::DataLossError("record truncated: " + std::to_string(bytes.size()) + " bytes");
  }
  uint8_t version = static_cast<uint8_t>(bytes[0]);
  if (version != kRecordVersion) {
    return absl::FailedPreconditionError("record version " + std::to_string(version) +
                                         " is not supported (this build reads version " +
                                         std::to_string(kRecordVersion) + ")");
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

uint32_t Crc32cPortable(const char* data, size_t n) {
  static const std::array<uint32_t, 256> table = MakeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ static_cast<uint8_t>(data[i])) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__)
// The SSE4.2 crc32 instruction computes CRC-32C directly, 8 bytes at a time.
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const char* data, size_t n) {
  uint64_t c = 0xFFFFFFFFu;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, data, 8);
    c = __builtin_ia32_crc32di(c, v);
    data += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, static_cast<uint8_t>(*data++));
  return c32 ^ 0xFFFFFFFFu;
}
#endif

}  // namespace

uint32_t Crc32c(const char* data, size_t n) {
#if defined(__x86_64__)
  static const bool sse42 = __builtin_cpu_supports("sse4.2");
  if (sse42) return Crc32cSse42(data, n);
#endif
  return Crc32cPortable(data, n);
}

std::string EncodeUnsealed(const RecordView& r) {
  std::string out;
  size_t hint = kRecordHeaderSize + 32 + r.topic.size() + r.value.size() +
                (r.key ? r.key->size() : 0);
  for (const auto& h : r.headers) hint += h.first.size() + h.second.size() + 4;
  out.reserve(hint);
  out.push_back(static_cast<char>(kRecordVersion));
  out.append(12, '\0');  // crc32c and receive time, filled by SealRecord
  body::PutPrefix(&out, r);
  PutBytes(&out, r.topic);
  body::PutTail(&out, r);
  return out;
}

void SealRecord(int64_t receive_time_ms, std::string* encoded) {
  std::string t;
  coding::PutFixed64(&t, static_cast<uint64_t>(receive_time_ms));
  std::memcpy(encoded->data() + 5, t.data(), 8);
  uint32_t crc = Crc32c(encoded->data() + 5, encoded->size() - 5);
  std::string c;
  coding::PutFixed32(&c, crc);
  std::memcpy(encoded->data() + 1, c.data(), 4);
}

RecordView ViewOf(const Record& r) {
  RecordView v;
  v.topic = r.topic;
  v.partition = r.partition;
  if (r.key) v.key = std::string_view(*r.key);
  v.value = r.value;
  for (const auto& h : r.headers) v.headers.emplace_back(h.key, h.value);
  v.client_timestamp_ms = r.client_timestamp_ms;
  return v;
}

std::string EncodeRecord(const Record& r) {
  std::string out = EncodeUnsealed(ViewOf(r));
  SealRecord(r.receive_time_ms, &out);
  return out;
}

absl::StatusOr<int64_t> PeekReceiveTime(std::string_view bytes) {
  if (absl::Status s = CheckHeader(bytes); !s.ok()) return s;
  return static_cast<int64_t>(coding::GetFixed64(bytes.data() + 5));
}

RecordRouting PeekRouting(std::string_view bytes) {
  RecordRouting r;
  if (bytes.size() <= kRecordHeaderSize) return r;
  coding::Reader in(bytes.substr(kRecordHeaderSize));
  uint8_t flags;
  uint64_t ts, partition;
  std::string_view topic;
  if (!in.Byte(&flags)) return r;
  if ((flags & body::kFlagClientTimestamp) && !in.Fixed64(&ts)) return r;
  if (!in.Varint(&partition) || !in.BytesView(&topic) || topic.empty() || topic.size() > 249 ||
      partition > static_cast<uint64_t>(INT32_MAX)) {
    return r;
  }
  for (char c : topic) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return r;
  }
  std::string_view key;
  if ((flags & body::kFlagKey) && !in.BytesView(&key)) return r;
  r.topic = topic;
  r.partition = static_cast<int32_t>(partition) - 1;
  if (flags & body::kFlagKey) r.key = key;
  return r;
}

std::string_view PeekTopic(std::string_view bytes) { return PeekRouting(bytes).topic; }

std::string SalvageTopic(std::string_view bytes) { return std::string(PeekTopic(bytes)); }

absl::StatusOr<Record> DecodeRecord(std::string_view bytes) {
  if (absl::Status s = CheckHeader(bytes); !s.ok()) return s;
  uint32_t want = coding::GetFixed32(bytes.data() + 1);
  uint32_t got = Crc32c(bytes.data() + 5, bytes.size() - 5);
  if (want != got) return absl::DataLossError("record checksum mismatch");
  Record r;
  r.receive_time_ms = static_cast<int64_t>(coding::GetFixed64(bytes.data() + 5));
  coding::Reader in(bytes.substr(kRecordHeaderSize));
  uint8_t flags;
  if (!body::GetPrefix(&in, &flags, &r) || !in.Bytes(&r.topic) || !body::GetTail(&in, flags, &r)) {
    return absl::DataLossError("record body malformed");
  }
  return r;
}

}  // namespace kspool::wal
