// Little-endian fixed-width integers, LEB128 varints and length-prefixed bytes: the
// primitives of the WAL's value encodings (FORMAT.md). Internal to wal/. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kspool::wal::coding {

inline void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
inline uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
// Signed integers as varints, small magnitudes short (protobuf's zigzag): 0, -1, 1, -2, ...
inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}
inline void PutBytes(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s.data(), s.size());
}

// Sequential reader; every read checks bounds and returns false past the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return false;
      uint8_t b = static_cast<uint8_t>(in_[0]);
      in_.remove_prefix(1);
      *v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool Bytes(std::string* s) {
    std::string_view v;
    if (!BytesView(&v)) return false;
    s->assign(v);
    return true;
  }
  // As Bytes(), pointing into the input instead of copying.
  bool BytesView(std::string_view* s) {
    uint64_t n;
    if (!Varint(&n) || n > in_.size()) return false;
    *s = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool Fixed64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = GetFixed64(in_.data());
    in_.remove_prefix(8);
    return true;
  }
  bool Byte(uint8_t* b) {
    if (in_.empty()) return false;
    *b = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  std::string_view rest() const { return in_; }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

}  // namespace kspool::wal::coding
