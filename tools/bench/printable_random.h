// Random printable payloads for the benchmark's loads: xorshift64 over a 64-symbol
// alphabet (6 random bits per byte, no newline), cheap enough that the sender is not
// what limits a run, and incompressible enough that lz4 cannot shrink a batch to
// nothing. Thread safety: one instance per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kspool::bench {

class PrintableRandom {
 public:
  // Overwrites every byte of *value.
  void Fill(std::string* value) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < value->size(); ++i) {
      if (i % 10 == 0) {
        state_ ^= state_ << 13;
        state_ ^= state_ >> 7;
        state_ ^= state_ << 17;
      }
      (*value)[i] = kAlphabet[(state_ >> (6 * (i % 10))) & 63];
    }
  }

 private:
  uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace kspool::bench
