// SeqSketch (seq_sketch.h).
#include "base/seq_sketch.h"

#include <algorithm>

namespace kspool {
namespace {

// SplitMix64's finalizer: a bijection on 64-bit values that spreads every input bit.
uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::array<uint64_t, SeqSketch::kHashes> kSalt = {
    0x6b73706f6f6c2d31ULL, 0x6b73706f6f6c2d32ULL, 0x6b73706f6f6c2d33ULL};
constexpr uint64_t kCheckSalt = 0x6b73706f6f6c2d63ULL;

// The inverse of an odd number modulo 2^64 (Newton's iteration: each step doubles the
// correct low bits).
uint64_t InverseOdd(uint64_t o) {
  uint64_t x = o;  // correct to 3 bits for any odd o
  for (int i = 0; i < 5; ++i) x *= 2 - o * x;
  return x;
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// A cell with copies of one number only holds count c, sum c·s and check c·Check(s)
// (mod 2^64). The numbers s that fit; at most |c| of them (|c| a power of two's
// ambiguity), each confirmed by the check hash. Only small counts are tried.
constexpr int64_t kLargestPeeled = 8;

}  // namespace

size_t SeqSketch::CellOf(int hash, uint64_t seq) {
  return static_cast<size_t>(hash) * kCellsPerHash + Mix(seq ^ kSalt[hash]) % kCellsPerHash;
}

uint64_t SeqSketch::Check(uint64_t seq) { return Mix(seq ^ kCheckSalt); }

void SeqSketch::Add(uint64_t seq, int64_t times) {
  const uint64_t t = static_cast<uint64_t>(times);
  const uint64_t check = Check(seq);
  for (int h = 0; h < kHashes; ++h) {
    Cell& c = cells_[CellOf(h, seq)];
    c.count += t;
    c.sum += t * seq;
    c.check += t * check;
  }
  total_ += times;
}

void SeqSketch::Merge(const SeqSketch& other) {
  for (int i = 0; i < kCells; ++i) {
    cells_[i].count += other.cells_[i].count;
    cells_[i].sum += other.cells_[i].sum;
    cells_[i].check += other.cells_[i].check;
  }
  total_ += other.total_;
}

void SeqSketch::Subtract(const SeqSketch& other) {
  for (int i = 0; i < kCells; ++i) {
    cells_[i].count -= other.cells_[i].count;
    cells_[i].sum -= other.cells_[i].sum;
    cells_[i].check -= other.cells_[i].check;
  }
  total_ -= other.total_;
}

bool SeqSketch::empty() const {
  return std::all_of(cells_.begin(), cells_.end(), [](const Cell& c) { return c == Cell{}; });
}

SeqSketch::Decoded SeqSketch::Decode() const {
  SeqSketch work = *this;
  Decoded out;
  // The number a cell holds copies of alone, if it does: the count and the number.
  auto pure = [](const Cell& c, int64_t* times, uint64_t* seq) {
    const int64_t n = static_cast<int64_t>(c.count);
    if (n == 0 || n > kLargestPeeled || n < -kLargestPeeled) return false;
    const uint64_t a = static_cast<uint64_t>(n < 0 ? -n : n);
    const uint64_t sum = n < 0 ? 0 - c.sum : c.sum;  // a·s
    const int zeros = __builtin_ctzll(a);
    if (zeros > 0 && (sum & ((uint64_t{1} << zeros) - 1)) != 0) return false;
    const uint64_t base = (sum >> zeros) * InverseOdd(a >> zeros);
    for (uint64_t j = 0; j < (uint64_t{1} << zeros); ++j) {
      // s is known modulo 2^(64 - zeros); each lift is tried against the check hash.
      const uint64_t s = zeros == 0 ? base : (base & (~uint64_t{0} >> zeros)) + (j << (64 - zeros));
      if (static_cast<uint64_t>(n) * Check(s) == c.check) {
        *times = n;
        *seq = s;
        return true;
      }
    }
    return false;
  };
  bool peeled = true;
  while (peeled) {
    peeled = false;
    for (int i = 0; i < kCells; ++i) {
      int64_t times;
      uint64_t seq;
      if (!pure(work.cells_[i], &times, &seq)) continue;
      std::vector<uint64_t>& side = times > 0 ? out.positive : out.negative;
      side.insert(side.end(), static_cast<size_t>(times > 0 ? times : -times), seq);
      work.Add(seq, -times);
      peeled = true;
    }
  }
  out.complete = work.empty();
  std::sort(out.positive.begin(), out.positive.end());
  std::sort(out.negative.begin(), out.negative.end());
  return out;
}

std::string SeqSketch::Serialize() const {
  std::string out;
  out.reserve(kSerializedBytes);
  for (const Cell& c : cells_) {
    PutU64(&out, c.count);
    PutU64(&out, c.sum);
    PutU64(&out, c.check);
  }
  return out;
}

absl::StatusOr<SeqSketch> SeqSketch::Parse(std::string_view bytes) {
  if (bytes.size() != kSerializedBytes) {
    return absl::DataLossError("a sequence sketch is " + std::to_string(kSerializedBytes) +
                               " bytes, not " + std::to_string(bytes.size()));
  }
  SeqSketch s;
  for (int i = 0; i < kCells; ++i) {
    const char* p = bytes.data() + 24 * i;
    s.cells_[i] = {GetU64(p), GetU64(p + 8), GetU64(p + 16)};
  }
  uint64_t total = 0;
  for (int i = 0; i < kCellsPerHash; ++i) total += s.cells_[i].count;
  s.total_ = static_cast<int64_t>(total);
  return s;
}

}  // namespace kspool
