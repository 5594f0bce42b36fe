// DrainWindow: adding and removing slots, and recounting them (drain_window.h).
#include "agent/drain/drain_window.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kspool::agent {

DrainWindow::iterator DrainWindow::Admit(iterator hint, wal::Entry&& entry, TopicCharge& topic,
                                         bool reserved, bool* fresh) {
  const uint64_t size = entry.size;
  const size_t before = slots_.size();
  auto it = slots_.try_emplace(hint, entry.seq);
  *fresh = slots_.size() != before;
  if (!*fresh) {
    // Offered again: the slot there stays as it is; only the reader's charge goes back.
    if (reserved) Unreserve(topic, size);
    return it;
  }
  if (!reserved) Reserve(topic, size);
  bytes_ += size;
  if (!entry.status.ok()) ++undecodable_;
  it->second.entry = std::move(entry);
  return it;
}

void DrainWindow::Erase(iterator it, TopicCharge& topic) {
  const uint64_t size = it->second.entry.size;
  KSPOOL_DCHECK(bytes_ >= size);
  Unreserve(topic, size);
  bytes_ -= size;
  if (!it->second.entry.status.ok()) {
    KSPOOL_DCHECK(undecodable_ > 0);
    --undecodable_;
  }
  ++erases_;
  slots_.erase(it);
}

DrainWindow::iterator DrainWindow::FindNear(uint64_t seq, iterator near) {
  if (near != slots_.end()) {
    KSPOOL_DCHECK(erases_at_find_ == erases_);  // else `near` may dangle
    erases_at_find_ = erases_;
    if (near->first == seq) return near;
    if (++near != slots_.end() && near->first == seq) return near;
  }
  erases_at_find_ = erases_;
  return slots_.find(seq);
}

absl::Status DrainWindow::CheckCounts(
    const std::map<std::string, TopicState, std::less<>>& topics) const {
  auto fail = [](auto&&... parts) { return absl::InternalError(absl::StrCat(parts...)); };
  struct Count {
    uint64_t n = 0, bytes = 0;
  };
  std::map<std::string_view, Count> counts;
  uint64_t bytes = 0, undecodable = 0;
  for (const auto& [seq, slot] : slots_) {
    if (slot.entry.seq != seq) return fail("slot ", seq, " holds entry ", slot.entry.seq);
    Count& c = counts[slot.entry.record.topic];
    ++c.n;
    c.bytes += slot.entry.size;
    bytes += slot.entry.size;
    if (!slot.entry.status.ok()) ++undecodable;
  }
  if (undecodable != undecodable_) {
    return fail("the window counts ", undecodable_, " undecodable slots but holds ", undecodable);
  }
  if (bytes != bytes_)
    return fail("the window counts ", bytes_, " bytes but the slots hold ", bytes);
  for (const auto& [topic, c] : counts) {
    if (!topics.count(topic))
      return fail("topic '", std::string(topic), "' has ", c.n, " slots and no state");
  }
  for (const auto& [topic, ts] : topics) {
    auto c = counts.find(topic);
    const Count want = c == counts.end() ? Count{} : c->second;
    if (ts.window.messages() != want.n || ts.window.bytes() != want.bytes) {
      return fail("topic '", topic, "' counts ", ts.window.messages(), " entries / ",
                  ts.window.bytes(), " bytes in the window; the slots say ", want.n, " / ",
                  want.bytes);
    }
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
