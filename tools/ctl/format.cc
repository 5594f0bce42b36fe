#include "tools/ctl/format.h"

#include <chrono>
#include <ctime>

namespace kspool::ctl {
namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 if it is not valid there.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t min;
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) n = 2, min = 0x80;
  else if ((b & 0xF0) == 0xE0) n = 3, min = 0x800;
  else if ((b & 0xF8) == 0xF0) n = 4, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  uint32_t cp = b & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

std::string FormatTime(int64_t ms) {
  if (ms <= 0) return "-";
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

std::string FormatAge(int64_t ms) {
  char buf[64];
  if (ms < 0) ms = 0;
  const int64_t s = ms / 1000;
  if (ms < 1000) snprintf(buf, sizeof(buf), "%lldms", static_cast<long long>(ms));
  else if (s < 60) snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(ms) / 1000);
  else if (s < 3600) snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else if (s < 86400) snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600), static_cast<long long>(s % 3600 / 60));
  else snprintf(buf, sizeof(buf), "%lldd%02lldh", static_cast<long long>(s / 86400), static_cast<long long>(s % 86400 / 3600));
  return buf;
}

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<ValueFormat> ParseValueFormat(std::string_view name) {
  if (name == "auto") return ValueFormat::kAuto;
  if (name == "text") return ValueFormat::kText;
  if (name == "hex") return ValueFormat::kHex;
  if (name == "base64") return ValueFormat::kBase64;
  return std::nullopt;
}

const char* ValueFormatName(ValueFormat f) {
  switch (f) {
    case ValueFormat::kAuto: return "auto";
    case ValueFormat::kText: return "text";
    case ValueFormat::kHex: return "hex";
    case ValueFormat::kBase64: return "base64";
  }
  return "auto";
}

bool IsPrintableText(std::string_view bytes) {
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if ((b < 0x20 && c != '\t' && c != '\n' && c != '\r') || b == 0x7F) return false;
  }
  return IsValidUtf8(bytes);
}

ValueFormat Resolve(ValueFormat f, std::string_view bytes, bool for_json) {
  if (f == ValueFormat::kAuto) return IsPrintableText(bytes) ? ValueFormat::kText : ValueFormat::kHex;
  if (f == ValueFormat::kText && for_json && !IsValidUtf8(bytes)) return ValueFormat::kHex;
  return f;
}

std::string Hex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    out.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kDigits[static_cast<unsigned char>(c) & 0xF]);
  }
  return out;
}

std::string Base64(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[v & 63] : '=');
  }
  return out;
}

std::string HexDump(std::string_view bytes) {
  std::string out;
  for (size_t off = 0; off < bytes.size(); off += 16) {
    std::string_view line = bytes.substr(off, 16);
    char head[32];
    snprintf(head, sizeof(head), "%08zx  ", off);
    out += head;
    for (size_t i = 0; i < 16; ++i) {
      out += i < line.size() ? Hex(line.substr(i, 1)) + " " : "   ";
      if (i == 7) out += " ";
    }
    out += " |";
    for (char c : line) out.push_back(c >= 0x20 && c < 0x7F ? c : '.');
    out += "|\n";
  }
  return out;
}

std::string Render(std::string_view bytes, ValueFormat f) {
  switch (Resolve(f, bytes, /*for_json=*/false)) {
    case ValueFormat::kHex: return Hex(bytes);
    case ValueFormat::kBase64: return Base64(bytes);
    default: return std::string(bytes);
  }
}

std::string Preview(std::string_view bytes, size_t max_chars) {
  std::string out;
  if (!IsPrintableText(bytes)) {
    const size_t n = std::min(bytes.size(), (max_chars - 2) / 2);
    out = "0x" + Hex(bytes.substr(0, n));
    return n < bytes.size() ? out + "..." : out;
  }
  size_t chars = 0, i = 0;
  for (; i < bytes.size() && chars < max_chars; ++chars) {
    const char c = bytes[i];
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    const size_t n = Utf8Length(bytes, i);
    if (c != '\n' && c != '\t' && c != '\r') out.append(bytes.substr(i, n));
    i += n;
  }
  return i < bytes.size() ? out + "..." : out;
}

Table::Table(std::vector<std::string> columns) {
  for (std::string& c : columns) {
    const bool right = !c.empty() && c[0] == '>';
    right_.push_back(right);
    names_.push_back(right ? c.substr(1) : c);
  }
}

void Table::Add(std::vector<std::string> row) {
  row.resize(names_.size());
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out, const std::string& indent) const {
  // Widths in characters, not bytes, so UTF-8 cells line up.
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> w(names_.size());
  for (size_t i = 0; i < names_.size(); ++i) w[i] = width(names_[i]);
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(w[i] - width(row[i]), ' ');
      line += right_[i] ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : "");
      if (i + 1 < row.size()) line += "  ";
    }
    // An empty last cell leaves the separator behind.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  };
  print_row(names_);
  for (const auto& row : rows_) print_row(row);
}

}  // namespace kspool::ctl
