#include "agent/kafka/kafka_scan_record.h"

#include <charconv>

namespace kspool::agent {

std::optional<uint64_t> ParseKspoolSeq(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

RecordMark MarkRecord(const rd_kafka_message_t* msg, std::string_view agent_id) {
  RecordMark mark;
  rd_kafka_headers_t* hdrs = nullptr;
  // The message keeps ownership of its headers.
  if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return mark;
  std::optional<std::string_view> agent, seq;
  const char* name;
  const void* value;
  size_t size;
  for (size_t i = 0;
       rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
    const std::string_view key(name);
    const std::string_view v =
        value ? std::string_view(static_cast<const char*>(value), size) : std::string_view();
    mark.header_bytes += key.size() + v.size();
    if (!agent && key == kAgentHeader) agent = v;
    if (!seq && key == kSeqHeader) seq = v;
  }
  if (!agent || *agent != agent_id) return mark;
  const std::optional<uint64_t> parsed = seq ? ParseKspoolSeq(*seq) : std::nullopt;
  if (!parsed) {
    mark.owner = RecordOwner::kOursMalformedSeq;
    return mark;
  }
  mark.owner = RecordOwner::kOurs;
  mark.seq = *parsed;
  return mark;
}

}  // namespace kspool::agent
