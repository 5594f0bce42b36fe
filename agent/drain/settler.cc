// Settler (settler.h): the settle batch, from the window's finished entries to the WAL.
#include "agent/drain/settler.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace kspool::agent {

void Settler::Store(uint64_t seq, Slot& slot, wal::Outcome&& o) {
  const wal::Record& r = slot.entry.record;
  if (o.delivered() && o.seq == seq && o.topic == r.topic && o.size == slot.entry.size &&
      o.receive_time_ms == r.receive_time_ms && o.discard_reason.empty() && o.error.empty() &&
      o.raw.empty()) {
    KeepDelivered(slot, o.partition, o.offset, o.time_ms, o.raises_watermark);
    return;
  }
  slot.outcome = std::make_unique<wal::Outcome>(std::move(o));
}

void Settler::KeepDelivered(Slot& slot, int32_t partition, int64_t offset, int64_t time_ms,
                            bool raises_watermark) {
  slot.delivered = {partition, offset, time_ms, raises_watermark};
  slot.outcome.reset();
}

wal::Outcome Settler::Take(uint64_t seq, Slot& slot) {
  if (slot.outcome) {
    wal::Outcome o = std::move(*slot.outcome);
    slot.outcome.reset();
    return o;
  }
  const Slot::Delivered& d = slot.delivered;
  wal::Outcome o =
      wal::Outcome::Delivered(seq, slot.entry.record.topic, d.partition, d.offset, d.time_ms);
  o.size = slot.entry.size;
  o.receive_time_ms = slot.entry.record.receive_time_ms;
  o.raises_watermark = d.raises_watermark;
  return o;
}

void Settler::AddToBatch(DrainWindow::iterator it) {
  it->second.batched = true;
  batch_.push_back(Take(it->first, it->second));
  taken_.push_back(it);
}

absl::Status Settler::Settle(DrainWindow& window, int64_t now, bool all,
                             absl::FunctionRef<void(std::vector<wal::Outcome>*)> hold_watermarks,
                             absl::FunctionRef<void(DrainWindow::iterator)> erase) {
  if (!all && now < next_settle_ms_) return absl::OkStatus();
  // The window's iterators stay valid until the batch is settled: nothing else enters or
  // leaves the window meanwhile, so the settled entries are erased without a lookup.
  // Both vectors keep their capacity from one settle to the next (at most the window's
  // slots): a settle every few milliseconds would otherwise allocate them anew each time.
  KSPOOL_DCHECK(batch_.empty() && taken_.empty());
  batch_.reserve(finished_.size());  // every finished slot is listed there (Check)
  taken_.reserve(finished_.size());
  auto prefix_end = window.begin();
  for (; prefix_end != window.end() && prefix_end->second.state == Slot::kSettling; ++prefix_end) {
    AddToBatch(prefix_end);
  }
  // Every slot below this one is in the batch now: finished_'s entries below it are in
  // the batch or no longer in the window, and need no lookup.
  const uint64_t prefix_below = prefix_end == window.end() ? UINT64_MAX : prefix_end->first;
  // finished_'s entries before `passed` are in the batch or settled already.
  size_t passed = 0;
  DrainWindow::iterator w = window.end();
  for (uint64_t seq : finished_) {
    if (seq < prefix_below) {
      ++passed;
      continue;
    }
    w = window.FindNear(seq, w);  // finished_ is mostly in sequence order too
    if (w != window.end() && !w->second.batched) {
      if (!all && now - w->second.finished_ms < static_cast<int64_t>(options_.settle_delay_ms)) {
        break;  // later ones finished later still
      }
      AddToBatch(w);
    }
    ++passed;
  }
  if (batch_.empty()) return absl::OkStatus();
  TakeLowerOffsets(window, passed);
  hold_watermarks(&batch_);
  next_settle_ms_ = now + static_cast<int64_t>(options_.settle_interval_ms);
  absl::Status s = wal_->Settle(batch_);
  if (!s.ok()) {
    // The entries stay in the window and are settled on a later round. Whoever waits
    // for these outcomes hears of them now, once: the WAL may not reopen soon.
    if (options_.outcomes) TellNotSettled(s);
    for (size_t k = 0; k < taken_.size(); ++k) {
      taken_[k]->second.batched = false;
      Store(taken_[k]->first, taken_[k]->second, std::move(batch_[k]));
    }
    batch_.clear();
    taken_.clear();
    return s;
  }
  if (options_.outcomes) {
    // The listener hears of outcomes without their records (a discard's is in the dead
    // letters now).
    for (wal::Outcome& o : batch_) {
      if (!o.raw.empty()) std::string().swap(o.raw);
    }
    options_.outcomes->Settled(batch_);
  }
  if (!told_not_settled_.empty()) {
    for (const wal::Outcome& o : batch_) told_not_settled_.erase(o.seq);
  }
  for (DrainWindow::iterator it : taken_) erase(it);
  batch_.clear();
  taken_.clear();
  finished_.erase(finished_.begin(), finished_.begin() + static_cast<std::ptrdiff_t>(passed));
  while (!finished_.empty() && !window.count(finished_.front())) finished_.pop_front();
  return absl::OkStatus();
}

void Settler::TakeLowerOffsets(DrainWindow& window, size_t from) {
  // A partition's offsets follow the order entries were produced in, not their sequence
  // numbers (its keyed and unkeyed lanes go out independently), so an entry finished
  // after the prefix may lie below an offset the batch settles. Settled alone, that
  // offset would raise the partition's watermark above a delivered entry not settled yet,
  // and after a crash the restart reading from the watermark would not find that copy.
  // Keys own their topic: pushing onto the batch moves its outcomes.
  std::map<std::pair<std::string, int32_t>, int64_t> highest;
  // A batch is made of long runs of one partition's outcomes: one lookup per run.
  const wal::Outcome* run = nullptr;
  int64_t* run_highest = nullptr;
  for (const wal::Outcome& o : batch_) {
    if (!o.delivered() || o.offset < 0) continue;
    if (!run || o.partition != run->partition || o.topic != run->topic) {
      run = &o;
      run_highest = &highest[{o.topic, o.partition}];
    }
    *run_highest = std::max(*run_highest, o.offset);
  }
  if (highest.empty()) return;
  DrainWindow::iterator w = window.end();
  for (auto f = finished_.begin() + static_cast<std::ptrdiff_t>(from); f != finished_.end(); ++f) {
    w = window.FindNear(*f, w);
    if (w == window.end() || w->second.batched || w->second.state != Slot::kSettling) continue;
    const Slot& s = w->second;
    if (s.outcome && !s.outcome->delivered()) continue;
    const std::string& topic = s.outcome ? s.outcome->topic : s.entry.record.topic;
    const int32_t partition = s.outcome ? s.outcome->partition : s.delivered.partition;
    const int64_t offset = s.outcome ? s.outcome->offset : s.delivered.offset;
    auto h = highest.find(std::make_pair(topic, partition));
    if (h == highest.end() || offset > h->second) continue;
    AddToBatch(w);
  }
}

void Settler::TellNotSettled(const absl::Status& error) {
  std::vector<wal::Outcome> untold;
  for (const wal::Outcome& o : batch_) {
    if (!told_not_settled_.insert(o.seq).second) continue;
    wal::Outcome& u = untold.emplace_back();
    u.seq = o.seq;
    u.state = o.state;
    u.topic = o.topic;
    u.partition = o.partition;
    u.offset = o.offset;
    u.time_ms = o.time_ms;
    u.discard_reason = o.discard_reason;
    u.error = o.error;
  }
  if (!untold.empty()) options_.outcomes->NotSettled(untold, error);
}

absl::Status Settler::Check(const DrainWindow& window) const {
  auto fail = [](auto&&... parts) { return absl::InternalError(absl::StrCat(parts...)); };
  if (!batch_.empty() || !taken_.empty()) return fail("a settle batch is left between two calls");
  // Settle drops the settled prefix of finished_ without looking its entries up: an
  // entry it dropped by mistake would wait in the window, finished, forever.
  const std::set<uint64_t> finished(finished_.begin(), finished_.end());
  for (const auto& [seq, slot] : window) {
    if (slot.state == Slot::kSettling && !finished.count(seq)) {
      return fail("seq ", seq, " is finished but not listed to be settled");
    }
    if (slot.batched) return fail("seq ", seq, " is still marked part of a settle batch");
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
