// libFuzzer target for the Bruce/Dory input decoder (agent/bruce/bruce_codec.h). The input is
// read twice: as one datagram, and as a stream of messages framed by their Size fields
// (as the stream and TCP transports read it). Properties:
//   * decoding never reads outside the input, and an accepted message's fields point
//     into it;
//   * an accepted message, written again from its fields by an independent encoder
//     (the documented layout), gives back exactly the input bytes;
//   * a refusal carries one of the six documented reasons;
//   * a frame size is accepted only within [8, max], and PartitionKey's partition is in
//     [0, N).
// Build and run: tests/fuzz/run.sh bruce.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/bruce/bruce_codec.h"

namespace {

using kspool::agent::BruceMessage;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "bruce_fuzzer: property violated: %s\n", what);
  std::abort();
}

void Put(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string Encode(const BruceMessage& m) {
  std::string body;
  Put(&body, m.partition_key ? 257 : 256, 2);
  Put(&body, 0, 2);
  Put(&body, 0, 2);
  if (m.partition_key) Put(&body, static_cast<uint32_t>(*m.partition_key), 4);
  Put(&body, m.topic.size(), 2);
  body.append(m.topic);
  Put(&body, static_cast<uint64_t>(m.timestamp_ms), 8);
  Put(&body, m.key.size(), 4);
  body.append(m.key);
  Put(&body, m.value.size(), 4);
  body.append(m.value);
  std::string out;
  Put(&out, body.size() + 4, 4);
  return out + body;
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void CheckOne(std::string_view bytes, size_t max) {
  absl::StatusOr<BruceMessage> m = kspool::agent::DecodeBruceMessage(bytes, max);
  if (!m.ok()) {
    const auto r = kspool::agent::BruceRejectReason(m.status());
    if (kspool::agent::BruceError(r, "x").GetPayload("kspool.bruce.reject_reason") !=
        m.status().GetPayload("kspool.bruce.reject_reason")) {
      Fail("refusal without a documented reason");
    }
    return;
  }
  if (bytes.size() > max) Fail("accepted a message above the limit");
  if (!Inside(m->topic, bytes) || !Inside(m->key, bytes) || !Inside(m->value, bytes)) {
    Fail("a field points outside the input");
  }
  if (Encode(*m) != bytes) Fail("re-encoding an accepted message does not give the input");
  if (m->partition_key) {
    for (int n : {1, 3, 7, 1000}) {
      const int32_t p = kspool::agent::BrucePartitionFor(*m->partition_key, n);
      if (p < 0 || p >= n) Fail("partition out of range");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  CheckOne(in, 65536);
  CheckOne(in, 64);
  // As a stream: frame after frame while the Size fields allow.
  constexpr size_t kMaxFrame = 4096;
  size_t at = 0;
  while (in.size() - at >= 4) {
    absl::StatusOr<size_t> frame = kspool::agent::BruceFrameSize(in.substr(at), kMaxFrame);
    if (!frame.ok()) break;
    if (*frame < 8 || *frame > kMaxFrame) Fail("frame size out of bounds");
    if (in.size() - at < *frame) break;
    CheckOne(in.substr(at, *frame), kMaxFrame);
    at += *frame;
  }
  return 0;
}
