// libFuzzer target for the WAL record codec (wal/record.h): DecodeRecord and
// PeekReceiveTime must never crash on arbitrary bytes, and a record that decodes must
// survive EncodeRecord -> DecodeRecord unchanged. The same bytes go to the batch record
// parser (ParseBatch, with the count its own varint claims): it must never crash, and a
// batch that parses must rebuild byte for byte. Build and run: tests/fuzz/run.sh.
//
// Every input is decoded twice: as given (exercises the header and checksum checks),
// and with its crc32c recomputed over the rest (so mutations reach the body parser,
// which a random byte flip would otherwise hide behind a checksum mismatch).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wal/record.h"

namespace {

using kspool::wal::Record;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "record_fuzzer: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

void ExpectEqual(const Record& a, const Record& b, const char* where) {
  if (a.topic != b.topic) Fail(where, "topic differs");
  if (a.partition != b.partition) {
    Fail(where, "partition " + std::to_string(a.partition) + " vs " + std::to_string(b.partition));
  }
  if (a.key.has_value() != b.key.has_value()) Fail(where, "key presence differs");
  if (a.key && *a.key != *b.key) Fail(where, "key differs");
  if (a.value != b.value) Fail(where, "value differs");
  if (a.headers.size() != b.headers.size()) {
    Fail(where, "header count " + std::to_string(a.headers.size()) + " vs " +
                    std::to_string(b.headers.size()));
  }
  for (size_t i = 0; i < a.headers.size(); ++i) {
    if (a.headers[i].key != b.headers[i].key) Fail(where, "header key differs");
    if (a.headers[i].value != b.headers[i].value) Fail(where, "header value differs");
  }
  if (a.client_timestamp_ms.has_value() != b.client_timestamp_ms.has_value()) {
    Fail(where, "client timestamp presence differs");
  }
  if (a.client_timestamp_ms && *a.client_timestamp_ms != *b.client_timestamp_ms) {
    Fail(where, "client timestamp differs");
  }
  if (a.receive_time_ms != b.receive_time_ms) Fail(where, "receive time differs");
}

void Check(std::string_view bytes) {
  absl::StatusOr<Record> r = kspool::wal::DecodeRecord(bytes);
  absl::StatusOr<int64_t> t = kspool::wal::PeekReceiveTime(bytes);

  // PeekReceiveTime checks exactly the length and the version.
  bool header_ok = bytes.size() >= kspool::wal::kRecordHeaderSize &&
                   static_cast<uint8_t>(bytes[0]) == kspool::wal::kRecordVersion;
  if (t.ok() != header_ok) Fail("PeekReceiveTime", t.status().ToString());
  if (!t.ok()) {
    auto want = bytes.size() < kspool::wal::kRecordHeaderSize
                    ? absl::StatusCode::kDataLoss
                    : absl::StatusCode::kFailedPrecondition;
    if (t.status().code() != want) Fail("PeekReceiveTime code", t.status().ToString());
  }

  if (!r.ok()) {
    // Documented codes only: DATA_LOSS (checksum, truncation, malformed body) or
    // FAILED_PRECONDITION (unknown version).
    auto code = r.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition) {
      Fail("DecodeRecord code", r.status().ToString());
    }
    if (!header_ok && code != t.status().code()) Fail("Decode/Peek codes disagree");
    return;
  }
  if (!header_ok) Fail("DecodeRecord accepted a record PeekReceiveTime rejects");
  if (*t != r->receive_time_ms) Fail("PeekReceiveTime disagrees with DecodeRecord");
  if (r->partition < -1) Fail("decoded partition below -1", std::to_string(r->partition));

  // Round trip: encode what we decoded; it must decode to an equal record, and its
  // encoding must be stable (canonical) from then on.
  std::string enc = kspool::wal::EncodeRecord(*r);
  absl::StatusOr<Record> r2 = kspool::wal::DecodeRecord(enc);
  if (!r2.ok()) Fail("re-encoded record does not decode:", r2.status().ToString());
  ExpectEqual(*r, *r2, "round trip:");
  absl::StatusOr<int64_t> t2 = kspool::wal::PeekReceiveTime(enc);
  if (!t2.ok() || *t2 != r->receive_time_ms) Fail("PeekReceiveTime after round trip");
  if (kspool::wal::EncodeRecord(*r2) != enc) Fail("encoding is not stable");
  if (enc.size() > bytes.size()) {
    // Canonical varints are never longer than any other encoding of the same value.
    Fail("re-encoding is longer than the input",
         std::to_string(enc.size()) + " > " + std::to_string(bytes.size()));
  }
}

// A batch record's count is its key's; the fuzzer takes the one the bytes claim.
void CheckBatch(std::string_view bytes) {
  using namespace kspool::wal;
  uint32_t count = 1;
  if (bytes.size() > kRecordHeaderSize)
    count = static_cast<uint8_t>(bytes[kRecordHeaderSize]) & 0x7F;
  absl::StatusOr<BatchView> v = ParseBatch(bytes, count);
  if (!v.ok()) {
    auto code = v.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition) {
      Fail("ParseBatch code", v.status().ToString());
    }
    if (code != absl::StatusCode::kDataLoss) return;
    // What the WAL salvages from a record that fails its checksum: each message in the
    // version-1 layout, still unreadable, of its accounted size.
    absl::StatusOr<BatchView> layout = ParseBatchLayout(bytes, count);
    if (!layout.ok()) return;
    for (size_t i = 0; i < layout->bodies.size(); ++i) {
      const std::string one = UnreadableAsVersion1(*layout, i, bytes);
      if (one.size() != layout->MessageSize(i)) Fail("salvaged message size");
      if (DecodeRecord(one).ok()) Fail("a salvaged message of a corrupt record decodes");
      Check(one);
    }
    return;
  }
  if (v->bodies.size() != count) Fail("ParseBatch count");
  BatchRecordBuilder rebuilt(v->topic);
  bool all_decode = true;
  for (size_t i = 0; i < v->bodies.size(); ++i) {
    absl::StatusOr<Record> r = v->Decode(i);
    if (!r.ok()) {
      if (r.status().code() != absl::StatusCode::kDataLoss) Fail("Decode code");
      all_decode = false;
      continue;
    }
    rebuilt.Add(ViewOf(*r));
    if (rebuilt.MessageSize(rebuilt.count() - 1) != EncodeRecord(*r).size()) {
      Fail("a message's accounted size is not its version-1 record's");
    }
  }
  if (!all_decode) return;
  std::string again = rebuilt.Finish();
  SealRecord(v->receive_time_ms, &again);
  absl::StatusOr<BatchView> v2 = ParseBatch(again, count);
  if (!v2.ok()) Fail("rebuilt batch does not parse", v2.status().ToString());
  // Non-canonical varints in the input may make it longer, never shorter.
  if (again.size() > bytes.size()) Fail("rebuilt batch is longer than the input");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  CheckBatch(bytes);
  if (size >= kspool::wal::kRecordHeaderSize) {
    std::string fixed(bytes);
    uint32_t crc = kspool::wal::Crc32c(fixed.data() + 5, fixed.size() - 5);
    for (int i = 0; i < 4; ++i) fixed[1 + i] = static_cast<char>(crc >> (8 * i));
    if (fixed != bytes) {
      Check(fixed);
      CheckBatch(fixed);
    }
  }
  return 0;
}
