// SettledBitsMerge (settled_bits_merge.h). An operand is a tag byte and the record's count
// (varint), then either the indexes of its set bits as varint gaps ('s': the first index,
// then each one's distance from the one before minus one) or the bits as stored ('d').
// Leniency mirrors SettledBits::Parse: an operand or stored bitmap of another count, or
// one that does not decode, settles nothing. No defect hides there: a bit that is not set
// only makes its message live again, delivered a second time, never lost; and RocksDB
// checksums every block, so a damaged operand is refused before it reaches this code.
#include "wal/settled_bits_merge.h"

#include <deque>
#include <string_view>

#include "wal/coding.h"

namespace kspool::wal {
namespace {

constexpr char kSparse = 's';
constexpr char kDense = 'd';

// ORs `operand` into `bits` (of the count the operand names); false when it does not
// decode or names another count.
bool Apply(std::string_view operand, SettledBits* bits) {
  coding::Reader in(operand);
  uint8_t tag = 0;
  uint64_t count = 0;
  if (!in.Byte(&tag) || !in.Varint(&count) || count != bits->count()) return false;
  if (tag == kDense) {
    SettledBits add;
    if (!SettledBits::Parse(in.rest(), bits->count(), &add)) return false;
    for (uint32_t i = 0; i < add.count(); ++i) {
      if (add.Test(i)) bits->Set(i);
    }
    return true;
  }
  if (tag != kSparse) return false;
  uint64_t at = 0;
  bool first = true;
  while (!in.done()) {
    uint64_t gap = 0;
    if (!in.Varint(&gap)) return false;
    at = first ? gap : at + gap + 1;
    first = false;
    if (at >= count) return false;
    bits->Set(static_cast<uint32_t>(at));
  }
  return true;
}

// The count an operand names, or 0 when it does not decode.
uint32_t CountOf(std::string_view operand) {
  coding::Reader in(operand);
  uint8_t tag = 0;
  uint64_t count = 0;
  if (!in.Byte(&tag) || !in.Varint(&count) || count > UINT32_MAX) return 0;
  return static_cast<uint32_t>(count);
}

class SettledBitsOr final : public rocksdb::MergeOperator {
 public:
  const char* Name() const override { return "kspool.SettledBitsOr"; }

  // The newest operand names the record's count; the stored bitmap and every operand of
  // that count are ORed into a plain bitmap.
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    uint32_t count = 0;
    for (auto it = in.operand_list.rbegin(); it != in.operand_list.rend() && count == 0; ++it) {
      count = CountOf(std::string_view(it->data(), it->size()));
    }
    SettledBits bits(count);
    if (in.existing_value != nullptr) {
      SettledBits::Parse(std::string_view(in.existing_value->data(), in.existing_value->size()),
                         count, &bits);  // another length: none settled
    }
    for (const rocksdb::Slice& op : in.operand_list)
      Apply(std::string_view(op.data(), op.size()), &bits);
    out->new_value = bits.stored();
    return true;
  }

  // Operands of one count become one, so a key settled many times between compactions
  // keeps one operand, not one per settle.
  bool PartialMergeMulti(const rocksdb::Slice&, const std::deque<rocksdb::Slice>& operands,
                         std::string* new_value, rocksdb::Logger*) const override {
    if (operands.empty()) return false;
    const uint32_t count =
        CountOf(std::string_view(operands.back().data(), operands.back().size()));
    if (count == 0) return false;
    SettledBits bits(count);
    for (const rocksdb::Slice& op : operands) {
      if (!Apply(std::string_view(op.data(), op.size()), &bits)) return false;
    }
    *new_value = SettledBitsOperand(bits);
    return true;
  }

  bool AllowSingleOperand() const override { return true; }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> SettledBitsMerge() {
  static const auto* op =
      new std::shared_ptr<rocksdb::MergeOperator>(std::make_shared<SettledBitsOr>());
  return *op;
}

std::string SettledBitsOperand(const SettledBits& add) {
  std::string sparse(1, kSparse);
  coding::PutVarint(&sparse, add.count());
  const size_t dense_size = 1 + (sparse.size() - 1) + add.stored().size();
  uint64_t prev = 0;
  bool first = true;
  for (uint32_t i = 0; i < add.count() && sparse.size() <= dense_size; ++i) {
    if (!add.Test(i)) continue;
    coding::PutVarint(&sparse, first ? i : i - prev - 1);
    prev = i;
    first = false;
  }
  if (sparse.size() <= dense_size) return sparse;
  std::string dense(1, kDense);
  coding::PutVarint(&dense, add.count());
  dense += add.stored();
  return dense;
}

}  // namespace kspool::wal
