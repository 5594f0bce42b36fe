// SettledBits: which messages of a batch record are settled, as stored under its
// `settled_in/` key in `meta` (FORMAT.md, "Settling part of a record"): bit i (byte i / 8,
// bit i % 8, least significant first) is set once message first + i is settled.
// A plain value; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kspool::wal {

class SettledBits {
 public:
  SettledBits() = default;
  explicit SettledBits(uint32_t count) : count_(count), bytes_((count + 7) / 8, '\0') {}
  // Reads the stored bitmap of a record of `count` messages; false (and `out` unchanged)
  // when `stored` is not `count` bits long: not a bitmap this build wrote.
  static bool Parse(std::string_view stored, uint32_t count, SettledBits* out) {
    if (stored.size() != (count + 7) / 8) return false;
    out->count_ = count;
    out->bytes_.assign(stored);
    out->set_ = 0;
    for (uint32_t i = 0; i < count; ++i) out->set_ += out->Test(i) ? 1 : 0;
    return true;
  }

  bool Test(uint32_t i) const {
    return i < count_ && !bytes_.empty() && ((static_cast<uint8_t>(bytes_[i / 8]) >> (i % 8)) & 1);
  }
  // True if the bit was clear.
  bool Set(uint32_t i) {
    if (i >= count_ || Test(i)) return false;
    bytes_[i / 8] = static_cast<char>(static_cast<uint8_t>(bytes_[i / 8]) | (1u << (i % 8)));
    ++set_;
    return true;
  }
  void Clear() {
    count_ = 0;
    set_ = 0;
    bytes_.clear();
  }
  bool all() const { return count_ > 0 && set_ == count_; }
  uint32_t set() const { return set_; }
  uint32_t count() const { return count_; }
  const std::string& stored() const { return bytes_; }

 private:
  uint32_t count_ = 0;
  uint32_t set_ = 0;
  std::string bytes_;
};

}  // namespace kspool::wal
