// libFuzzer target for the Send request validator (agent/validate/request_validator.h). The
// input bytes are parsed as the agent parses them, into the wire mirror
// kspool.v1.wire.SendRequest (inputs that do not parse are skipped), and validated under
// two sets of small limits; the verdict is checked against an independent model of the
// documented rules:
//   OK    => 1..max_batch_messages messages; every topic is 1-249 chars of
//            [a-zA-Z0-9._-] and not "." or ".."; no partition below -1; a timestamp, if
//            present, in [0, now + max_future_timestamp_ms]; at most max_headers headers;
//            every header key non-empty, valid UTF-8 (RFC 3629, modelled here) and not
//            starting with "kspool."; value <= max_message_bytes; key + value + headers
//            <= max_message_bytes.
//   error => INVALID_ARGUMENT; unless the request is empty or has too many messages, the
//            message reads "message <i>: <field>: ..." where message i is the first
//            invalid one, messages before it are valid, and <field> is really invalid.
// Build and run: tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "agent/validate/request_validator.h"
#include "google/protobuf/stubs/logging.h"
#include "kspool/v1/spool_wire.pb.h"

namespace {

using kspool::agent::RequestLimits;
using kspool::v1::wire::Message;
using kspool::v1::wire::SendRequest;

constexpr int64_t kNow = 1'700'000'000'000;  // the agent's clock in this model

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "request_fuzzer: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

bool TopicOk(const std::string& t) {
  if (t.empty() || t.size() > 249 || t == "." || t == "..") return false;
  for (unsigned char c : t) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

bool PartitionOk(const Message& m) { return !m.has_partition() || m.partition() >= -1; }

bool TimestampOk(const Message& m, const RequestLimits& l) {
  return !m.has_timestamp_ms() ||
         (m.timestamp_ms() >= 0 &&
          m.timestamp_ms() <= kNow + static_cast<int64_t>(l.max_future_timestamp_ms));
}

bool HeaderCountOk(const Message& m, const RequestLimits& l) {
  return static_cast<uint64_t>(m.headers_size()) <= l.max_headers;
}

// RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
bool Utf8Ok(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    int n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const unsigned char cc = s[i + k];
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

bool HeaderKeyOk(const std::string& key) {
  return !key.empty() && Utf8Ok(key) && key.rfind("kspool.", 0) != 0;
}

bool ValueOk(const Message& m, const RequestLimits& l) {
  return m.value().size() <= l.max_message_bytes;
}

int FirstBadHeaderKey(const Message& m) {
  for (int h = 0; h < m.headers_size(); ++h) {
    if (!HeaderKeyOk(m.headers(h).key())) return h;
  }
  return -1;
}

uint64_t TotalSize(const Message& m) {
  uint64_t size = m.value().size() + (m.has_key() ? m.key().size() : 0);
  for (const auto& h : m.headers()) size += h.key().size() + h.value().size();
  return size;
}

bool MessageOk(const Message& m, const RequestLimits& l) {
  return TopicOk(m.topic()) && PartitionOk(m) && TimestampOk(m, l) && HeaderCountOk(m, l) &&
         ValueOk(m, l) && FirstBadHeaderKey(m) < 0 && TotalSize(m) <= l.max_message_bytes;
}

// Parses "message <i>: <field>: " at the start of `msg`; false if it is not there.
bool ParsePrefix(std::string_view msg, int* index, std::string* field) {
  constexpr std::string_view kPrefix = "message ";
  if (msg.substr(0, kPrefix.size()) != kPrefix) return false;
  msg.remove_prefix(kPrefix.size());
  size_t digits = 0;
  long long i = 0;
  while (digits < msg.size() && msg[digits] >= '0' && msg[digits] <= '9' && digits < 10) {
    i = i * 10 + (msg[digits] - '0');
    ++digits;
  }
  if (digits == 0 || (digits > 1 && msg[0] == '0')) return false;
  msg.remove_prefix(digits);
  if (msg.substr(0, 2) != ": ") return false;
  msg.remove_prefix(2);
  size_t end = msg.find(": ");
  if (end == std::string_view::npos || end == 0) return false;
  *index = static_cast<int>(i);
  *field = std::string(msg.substr(0, end));
  return true;
}

void Check(const SendRequest& req, const RequestLimits& l) {
  absl::Status s = kspool::agent::ValidateSendRequest(req, l, kNow);
  const int n = req.messages_size();
  const bool whole_bad = n == 0 || static_cast<uint64_t>(n) > l.max_batch_messages;
  int first_bad = -1;
  if (!whole_bad) {
    for (int i = 0; i < n; ++i) {
      if (!MessageOk(req.messages(i), l)) {
        first_bad = i;
        break;
      }
    }
  }
  const bool model_ok = !whole_bad && first_bad < 0;

  if (s.ok()) {
    if (!model_ok) {
      Fail("accepted an invalid request:",
           whole_bad ? "message count " + std::to_string(n)
                     : "message " + std::to_string(first_bad) + " " +
                           req.messages(first_bad).ShortDebugString());
    }
    return;
  }

  if (s.code() != absl::StatusCode::kInvalidArgument) Fail("error code", s.ToString());
  if (model_ok) Fail("rejected a valid request:", s.ToString());

  int index = -1;
  std::string field;
  const std::string msg(s.message());
  bool has_prefix = ParsePrefix(msg, &index, &field);
  if (whole_bad) {
    if (has_prefix) Fail("whole-request error names a message:", s.ToString());
    return;
  }
  if (!has_prefix) Fail("error does not start with \"message <i>: <field>: \":", s.ToString());
  if (index != first_bad) {
    Fail("error names the wrong message:",
         s.ToString() + " (first invalid is " + std::to_string(first_bad) + ")");
  }
  const Message& m = req.messages(index);
  bool field_bad;
  if (field == "topic") {
    field_bad = !TopicOk(m.topic());
  } else if (field == "partition") {
    field_bad = !PartitionOk(m);
  } else if (field == "timestamp_ms") {
    field_bad = !TimestampOk(m, l);
  } else if (field == "headers") {
    field_bad = !HeaderCountOk(m, l);
  } else if (field == "value") {
    field_bad = !ValueOk(m, l);
  } else if (field == "message") {
    field_bad = TotalSize(m) > l.max_message_bytes;
  } else if (field.rfind("headers[", 0) == 0 && field.size() > 13 &&
             field.compare(field.size() - 5, 5, "].key") == 0) {
    std::string num = field.substr(8, field.size() - 13);
    int h = -1;
    if (!num.empty() && num.size() <= 9 && num.find_first_not_of("0123456789") == std::string::npos) {
      h = std::stoi(num);
    }
    field_bad = h >= 0 && h == FirstBadHeaderKey(m);
  } else {
    Fail("error names an unknown field:", s.ToString());
  }
  if (!field_bad) Fail("error names a field that is valid:", s.ToString());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // nothing protobuf says matters here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SendRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  // Production-shaped small limits, and tiny ones so that size and count limits are
  // reachable within -max_len.
  Check(req, RequestLimits{4096, 64, 64, 3'600'000});
  Check(req, RequestLimits{64, 8, 2, 0});
  return 0;
}
