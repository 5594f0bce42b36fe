#include "tools/ctl/entry_view.h"

#include <cstdio>

#include "wal/record.h"

namespace kspool::ctl {
namespace {

void PutBytes(Json* j, const std::string& name, std::string_view bytes, ValueFormat f) {
  const ValueFormat resolved = Resolve(f, bytes, /*for_json=*/true);
  (*j)[name] = Render(bytes, resolved);
  (*j)[name + "_encoding"] = ValueFormatName(resolved);
}

std::string Line(const char* format, const std::vector<std::string>& cells) {
  char buf[512];
  snprintf(buf, sizeof(buf), format, cells[0].c_str(), cells[1].c_str(), cells[2].c_str(),
           cells[3].c_str(), cells[4].c_str(), cells[5].c_str(), cells[6].c_str());
  return buf;
}

constexpr char kEntryLine[] = "%8s  %-24s  %-16s  %4s  %-16s  %7s  %s";
constexpr char kDeadLine[] = "%8s  %-24s  %-18s  %-16s  %-16s  %7s  %s";

std::string KeyCell(const wal::Record& r) {
  if (!r.key) return "-";
  return r.key->empty() ? "\"\"" : Preview(*r.key, 16);
}

// "field        value" lines of `show`.
void Field(std::ostream& out, const std::string& name, const std::string& value) {
  std::string pad(name.size() < 14 ? 14 - name.size() : 1, ' ');
  out << name << pad << value << "\n";
}

std::string Shown(std::string_view bytes, ValueFormat f) {
  const ValueFormat resolved = Resolve(f, bytes, /*for_json=*/false);
  if (resolved == ValueFormat::kText) return std::string(bytes);
  return Render(bytes, resolved) + " (" + ValueFormatName(resolved) + ")";
}

void PrintBody(std::ostream& out, const std::string& name, std::string_view bytes, ValueFormat f) {
  const ValueFormat resolved = Resolve(f, bytes, /*for_json=*/false);
  Field(out, name, std::to_string(bytes.size()) + " bytes, " + ValueFormatName(resolved));
  if (resolved == ValueFormat::kHex) {
    out << HexDump(bytes);
  } else if (!bytes.empty()) {
    out << Render(bytes, resolved) << "\n";
  }
}

void PrintFields(std::ostream& out, const wal::Entry& e, ValueFormat f) {
  if (!e.status.ok()) {
    Field(out, "status", "CORRUPT: " + e.status.ToString());
    const std::string topic = TopicOf(e);
    Field(out, "topic", topic.empty() ? "(unknown)" : topic + " (salvaged from the damaged record)");
    Field(out, "record size", std::to_string(e.size) + " bytes");
    PrintBody(out, "raw record", e.raw, f == ValueFormat::kAuto ? ValueFormat::kHex : f);
    return;
  }
  const wal::Record& r = e.record;
  Field(out, "received", FormatTime(r.receive_time_ms));
  Field(out, "topic", r.topic);
  Field(out, "partition", r.partition < 0 ? "auto" : std::to_string(r.partition));
  Field(out, "key", !r.key ? "(none)" : r.key->empty() ? "\"\"" : Shown(*r.key, f));
  Field(out, "client time",
        r.client_timestamp_ms ? FormatTime(*r.client_timestamp_ms) : std::string("-"));
  Field(out, "record size", std::to_string(e.size) + " bytes");
  Field(out, "headers", std::to_string(r.headers.size()));
  for (const wal::Header& h : r.headers) out << "  " << Shown(h.key, f) << " = " << Shown(h.value, f) << "\n";
  PrintBody(out, "value", r.value, f);
}

}  // namespace

wal::Entry EntryOf(const wal::DeadLetter& d) {
  wal::Entry e;
  e.seq = d.seq;
  e.size = d.raw.size();
  absl::StatusOr<wal::Record> r = wal::DecodeRecord(d.raw);
  if (r.ok()) {
    e.record = std::move(r).value();
  } else {
    e.status = r.status();
    e.raw = d.raw;
  }
  return e;
}

std::string TopicOf(const wal::Entry& e) {
  return e.status.ok() ? e.record.topic : wal::SalvageTopic(e.raw);
}

std::string EntryListHeader() {
  return Line(kEntryLine, {"SEQ", "RECEIVED", "TOPIC", "PART", "KEY", "SIZE", "VALUE"});
}

std::string EntryListLine(const wal::Entry& e) {
  if (!e.status.ok()) {
    return Line(kEntryLine, {std::to_string(e.seq), "-", TopicOf(e), "-", "-",
                             std::to_string(e.size), "CORRUPT: " + e.status.ToString()});
  }
  const wal::Record& r = e.record;
  return Line(kEntryLine, {std::to_string(e.seq), FormatTime(r.receive_time_ms), r.topic,
                           r.partition < 0 ? "auto" : std::to_string(r.partition), KeyCell(r),
                           std::to_string(r.value.size()), Preview(r.value, 40)});
}

std::string DeadListHeader() {
  return Line(kDeadLine, {"SEQ", "DISCARDED", "REASON", "TOPIC", "KEY", "SIZE", "ERROR"});
}

std::string DeadListLine(const wal::DeadLetter& d) {
  const wal::Entry e = EntryOf(d);
  return Line(kDeadLine, {std::to_string(d.seq), FormatTime(d.discard_time_ms), d.reason,
                          TopicOf(e), e.status.ok() ? KeyCell(e.record) : "-",
                          std::to_string(e.status.ok() ? e.record.value.size() : d.raw.size()),
                          Preview(d.error_text, 60)});
}

void PrintEntry(std::ostream& out, const wal::Entry& e, ValueFormat f) {
  Field(out, "sequence", std::to_string(e.seq));
  PrintFields(out, e, f);
}

void PrintDeadLetter(std::ostream& out, const wal::DeadLetter& d, ValueFormat f) {
  Field(out, "dead letter", std::to_string(d.seq));
  Field(out, "discarded", FormatTime(d.discard_time_ms));
  Field(out, "reason", d.reason);
  Field(out, "error", d.error_text.empty() ? "-" : d.error_text);
  PrintFields(out, EntryOf(d), f);
}

Json EntryJson(const wal::Entry& e, ValueFormat f, bool full) {
  Json j = {{"seq", e.seq}, {"size", e.size}, {"corrupt", !e.status.ok()}};
  if (!e.status.ok()) {
    j["error"] = e.status.ToString();
    const std::string topic = TopicOf(e);
    j["topic"] = topic.empty() ? Json() : Json(topic);
    if (full) PutBytes(&j, "raw", e.raw, f == ValueFormat::kAuto ? ValueFormat::kHex : f);
    return j;
  }
  const wal::Record& r = e.record;
  j["receive_time_ms"] = r.receive_time_ms;
  j["receive_time"] = FormatTime(r.receive_time_ms);
  j["topic"] = r.topic;
  j["partition"] = r.partition < 0 ? Json() : Json(r.partition);
  if (r.key) PutBytes(&j, "key", *r.key, f);
  else j["key"] = nullptr;
  j["value_size"] = r.value.size();
  j["client_timestamp_ms"] =
      r.client_timestamp_ms ? Json(*r.client_timestamp_ms) : Json();
  j["header_count"] = r.headers.size();
  if (!full) return j;
  PutBytes(&j, "value", r.value, f);
  j["headers"] = Json::array();
  for (const wal::Header& h : r.headers) {
    Json jh;
    PutBytes(&jh, "key", h.key, f);
    PutBytes(&jh, "value", h.value, f);
    j["headers"].push_back(std::move(jh));
  }
  return j;
}

Json DeadLetterJson(const wal::DeadLetter& d, ValueFormat f, bool full) {
  Json j = EntryJson(EntryOf(d), f, full);
  j["discard_time_ms"] = d.discard_time_ms;
  j["discard_time"] = FormatTime(d.discard_time_ms);
  j["reason"] = d.reason;
  j["error_text"] = d.error_text;
  return j;
}

std::string JsonLine(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace kspool::ctl
