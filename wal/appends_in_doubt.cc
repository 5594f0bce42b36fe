// AppendsInDoubt (appends_in_doubt.h).
#include "wal/appends_in_doubt.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/types/optional.h"

namespace kspool::wal {

absl::Status MarkAppendInDoubt(absl::Status s, uint64_t first_seq) {
  s.SetPayload(kAppendInDoubtPayload, absl::Cord(std::to_string(first_seq)));
  return s;
}

std::optional<uint64_t> AppendInDoubtSeq(const absl::Status& s) {
  absl::optional<absl::Cord> p = s.GetPayload(kAppendInDoubtPayload);
  uint64_t seq = 0;
  if (!p || !absl::SimpleAtoi(std::string(*p), &seq)) return std::nullopt;
  return seq;
}

void AppendsInDoubt::Failed(uint64_t first_seq) {
  appends_[first_seq] = std::nullopt;
  while (appends_.size() > kMaxRemembered) appends_.erase(appends_.begin());
}

void AppendsInDoubt::Resolve(uint64_t durable_next_seq) {
  for (auto& [first, kept] : appends_) {
    if (!kept) kept = first < durable_next_seq;
  }
}

absl::StatusOr<bool> AppendsInDoubt::Kept(uint64_t first_seq) const {
  auto it = appends_.find(first_seq);
  if (it == appends_.end()) {
    return absl::NotFoundError("no failed append starting at sequence number " +
                               std::to_string(first_seq) + " is remembered");
  }
  if (!it->second) {
    return absl::UnavailableError("the outcome of the append starting at sequence number " +
                                  std::to_string(first_seq) + " is known once the WAL is reopened");
  }
  return *it->second;
}

}  // namespace kspool::wal
