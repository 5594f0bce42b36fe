// How WAL entries and dead letters look in kspoolctl's output: one line of a listing,
// the whole entry of `show`, and their JSON objects. Records are decoded by wal/'s
// codec only (wal/record.h).
// Thread safety: pure functions.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/ctl/format.h"
#include "wal/entry.h"

namespace kspool::ctl {

// JSON objects keep their fields in the order written, for people reading them.
using Json = nlohmann::ordered_json;

// A dead letter's record decoded like a log entry (status set when it does not decode).
wal::Entry EntryOf(const wal::DeadLetter& d);
// The topic of an entry: decoded, or salvaged from a damaged record ("" if unknown).
std::string TopicOf(const wal::Entry& e);

// `wal list`: a header, then one line per entry.
std::string EntryListHeader();
std::string EntryListLine(const wal::Entry& e);
// `dead list`.
std::string DeadListHeader();
std::string DeadListLine(const wal::DeadLetter& d);

// `wal show` / `dead show`: every field, the value in format `f`.
void PrintEntry(std::ostream& out, const wal::Entry& e, ValueFormat f);
void PrintDeadLetter(std::ostream& out, const wal::DeadLetter& d, ValueFormat f);

// JSON. `full`: with key, value and headers (dump, show); otherwise the listing's fields.
// Byte strings are {"<name>": "...", "<name>_encoding": "text"|"hex"|"base64"}.
Json EntryJson(const wal::Entry& e, ValueFormat f, bool full);
Json DeadLetterJson(const wal::DeadLetter& d, ValueFormat f, bool full);
// One line of JSON; bytes that are not UTF-8 (e.g. in an error text) become U+FFFD.
std::string JsonLine(const Json& j);

}  // namespace kspool::ctl
