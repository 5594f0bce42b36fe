// Text building blocks of kspoolctl's output: times, ages, byte strings shown as text,
// hex or base64, and aligned tables. Everything a golden test compares goes through
// here, so the formats stay stable.
// Thread safety: pure functions; a Table is used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace kspool::ctl {

// 2026-11-30T06:08:47.123Z (UTC); "-" for 0 (unknown).
std::string FormatTime(int64_t ms);
// A duration for people: 850ms, 12.3s, 4m05s, 3h12m, 2d04h.
std::string FormatAge(int64_t ms);
int64_t NowMillis();

// How byte strings (values, keys, header values) are shown. kAuto: as text when they
// are printable UTF-8, else as hex.
enum class ValueFormat { kAuto, kText, kHex, kBase64 };
std::optional<ValueFormat> ParseValueFormat(std::string_view name);
const char* ValueFormatName(ValueFormat f);

// Valid UTF-8 with no control characters other than tab, CR and LF.
bool IsPrintableText(std::string_view bytes);
// kAuto resolved for `bytes`; for JSON, kText becomes kHex on bytes that are not UTF-8.
ValueFormat Resolve(ValueFormat f, std::string_view bytes, bool for_json);
std::string Hex(std::string_view bytes);
std::string Base64(std::string_view bytes);
// xxd-style lines: offset, 16 bytes in hex, the printable ones as ASCII.
std::string HexDump(std::string_view bytes);
// `bytes` in format `f` (resolved), whole.
std::string Render(std::string_view bytes, ValueFormat f);
// One short, single-line preview: text with escaped control characters, or 0x-hex;
// cut at `max_chars` with "...".
std::string Preview(std::string_view bytes, size_t max_chars);

// Rows of cells printed with aligned columns. Columns named with a leading '>' are
// right-aligned (numbers); the '>' is not printed.
class Table {
 public:
  explicit Table(std::vector<std::string> columns);
  void Add(std::vector<std::string> row);
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<std::string> names_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace kspool::ctl
