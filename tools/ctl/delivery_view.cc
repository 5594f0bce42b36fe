#include "tools/ctl/delivery_view.h"

namespace kspool::ctl {
namespace {

using kspool::v1::DeliveryStatus;

std::string Detail(const DeliveryStatus& d) {
  if (d.discard_reason().empty()) return d.error();
  return d.error().empty() ? d.discard_reason() : d.discard_reason() + ": " + d.error();
}

// A value for a key=value field: as is when it is one printable word, else quoted with
// control characters escaped (Preview does that), so a line stays one line.
std::string Field(const std::string& name, const std::string& value) {
  const bool plain = !value.empty() && value.find_first_of(" \"=") == std::string::npos &&
                     IsPrintableText(value) && value.find_first_of("\t\r\n") == std::string::npos;
  if (plain) return " " + name + "=" + value;
  std::string quoted;
  for (char c : Preview(value, value.size() + 1)) {
    if (c == '"' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  return " " + name + "=\"" + quoted + "\"";
}

}  // namespace

const char* StateName(DeliveryStatus::State state) {
  switch (state) {
    case DeliveryStatus::PENDING: return "PENDING";
    case DeliveryStatus::DELIVERED: return "DELIVERED";
    case DeliveryStatus::DISCARDED: return "DISCARDED";
    default: return "UNKNOWN";
  }
}

Json DeliveryJson(const DeliveryStatus& d) {
  return {{"sequence", d.sequence()},
          {"state", StateName(d.state())},
          {"topic", d.topic()},
          {"partition", d.partition()},
          {"offset", d.offset()},
          {"delivered_time_ms", d.delivered_time_ms()},
          {"discard_reason", d.discard_reason()},
          {"error", d.error()}};
}

Table DeliveryTable() {
  return Table({">SEQ", "STATE", "TOPIC", ">PARTITION", ">OFFSET", "TIME", "DETAIL"});
}

void AddDeliveryRow(const DeliveryStatus& d, Table* table) {
  const bool delivered = d.state() == DeliveryStatus::DELIVERED;
  table->Add({std::to_string(d.sequence()), StateName(d.state()),
              d.topic().empty() ? "-" : Preview(d.topic(), 60),
              delivered ? std::to_string(d.partition()) : "-",
              delivered ? std::to_string(d.offset()) : "-", FormatTime(d.delivered_time_ms()),
              Preview(Detail(d), 200)});
}

std::string DeliveryLine(const DeliveryStatus& d) {
  std::string line = std::to_string(d.sequence()) + " " + StateName(d.state());
  if (!d.topic().empty()) line += Field("topic", d.topic());
  switch (d.state()) {
    case DeliveryStatus::DELIVERED:
      line += " partition=" + std::to_string(d.partition()) + " offset=" + std::to_string(d.offset());
      break;
    case DeliveryStatus::DISCARDED:
      line += Field("reason", d.discard_reason());
      if (!d.error().empty()) line += Field("error", d.error());
      break;
    default:
      if (!d.error().empty()) line += Field("error", d.error());
  }
  if (d.delivered_time_ms() > 0) line += " time=" + FormatTime(d.delivered_time_ms());
  return line;
}

}  // namespace kspool::ctl
