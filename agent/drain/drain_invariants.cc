// DrainLoop::CheckInvariants: the window's bookkeeping, recounted. The window's counters
// and the topics' charges change only in DrainWindow, which asserts each change; the
// lanes and the counts of entries in Kafka change across the drain's files. This says
// which one disagrees with a recount over the window's slots,
// so that a test (and every pass of a KSPOOL_DCHECKS build) catches the first pass that
// breaks one, not the crash or the stall it causes later.
//
// Checked:
//  * the window's counters and each topic's charge equal a recount of the slots, and every
//    slot's topic has its TopicState (DrainWindow::CheckCounts);
//  * each sequence number waits in at most one lane, once, and only while its slot is
//    ready or backing off, in the lane the slot names; every slot in those states is in
//    that lane; lanes are sorted; every seq in a lane has a slot;
//  * each topic's in_kafka count per partition equals the slots handed to the producer
//    for that partition;
//  * the window holds at most max_inflight_messages (plus undecodable entries, which are
//    taken whatever the room) and max_inflight_bytes plus one entry;
//  * each topic's own state holds its guarantees (TopicState::Check: its unread range);
//  * every finished slot is listed to be settled, and none is left marked batched
//    (Settler::Check);
//  * a copy found and kept for later (InDoubtEntries) is for an entry outside the window: one
//    read into it is settled from the copy at once (AdmitInDoubt, ExpireUnread).
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/drain/drain_loop.h"

namespace kspool::agent {

absl::Status DrainLoop::CheckInvariants() const {
  auto fail = [](auto&&... parts) { return absl::InternalError(absl::StrCat(parts...)); };
  if (absl::Status s = window_.CheckCounts(topics_); !s.ok()) return s;
  struct Count {
    std::map<int32_t, uint64_t> in_kafka;
  };
  std::map<std::string, Count, std::less<>> counts;
  uint64_t largest = 0;
  for (const auto& [seq, slot] : window_) {
    largest = std::max<uint64_t>(largest, slot.entry.size);
    if (slot.state == Slot::kInKafka) ++counts[slot.entry.record.topic].in_kafka[slot.produced_to];
  }
  // Which lane each seq waits in, from the lanes' side.
  std::map<uint64_t, std::pair<const std::string*, int32_t>> queued;
  for (const auto& named : topics_) {
    // Not a structured binding: the lambdas below capture the name (C++17 forbids that).
    const std::string& topic = named.first;
    const TopicState& ts = named.second;
    auto c = counts.find(topic);
    const Count none;
    const Count& want = c == counts.end() ? none : c->second;
    for (const auto& [p, n] : ts.lanes.in_kafka) {
      auto k = want.in_kafka.find(p);
      const uint64_t have = k == want.in_kafka.end() ? 0 : k->second;
      if (n != have) {
        return fail("topic '", topic, "' counts ", n, " entries in Kafka for partition ", p,
                    "; the slots say ", have);
      }
    }
    for (const auto& [p, have] : want.in_kafka) {
      if (have > 0 && !ts.lanes.in_kafka.count(p)) {
        return fail("topic '", topic, "' has ", have, " slots in Kafka for partition ", p,
                    " and no count for it");
      }
    }
    if (absl::Status s = ts.Check(topic); !s.ok()) return s;
    auto lane = [&](const Lane& l, int32_t id) -> absl::Status {
      uint64_t prev = 0;
      for (uint64_t seq : l.ready) {
        if (prev != 0 && seq <= prev) {
          return fail("lane ", id, " of '", topic, "' is not sorted at seq ", seq);
        }
        prev = seq;
      }
      auto add = [&](uint64_t seq) -> absl::Status {
        auto [it, fresh] = queued.try_emplace(seq, &topic, id);
        if (!fresh) {
          return fail("seq ", seq, " waits twice: in lane ", it->second.second, " of '",
                      *it->second.first, "' and in lane ", id, " of '", topic, "'");
        }
        auto w = window_.find(seq);
        if (w == window_.end()) return fail("seq ", seq, " waits in lane ", id, " of '", topic,
                                            "' without a slot");
        const Slot& s = w->second;
        if (s.state != Slot::kReady && s.state != Slot::kBackoff) {
          return fail("seq ", seq, " waits in lane ", id, " of '", topic, "' in state ",
                      static_cast<int>(s.state));
        }
        if (s.lane != id || s.entry.record.topic != topic) {
          return fail("seq ", seq, " waits in lane ", id, " of '", topic, "'; its slot says lane ",
                      s.lane, " of '", s.entry.record.topic, "'");
        }
        return absl::OkStatus();
      };
      for (uint64_t seq : l.ready) {
        if (absl::Status s = add(seq); !s.ok()) return s;
      }
      for (uint64_t seq : l.waiting) {
        if (absl::Status s = add(seq); !s.ok()) return s;
      }
      return absl::OkStatus();
    };
    if (absl::Status s = lane(ts.lanes.unrouted, kLaneUnrouted); !s.ok()) return s;
    if (absl::Status s = lane(ts.lanes.unordered, kLaneUnordered); !s.ok()) return s;
    for (const auto& [p, l] : ts.lanes.ordered) {
      if (absl::Status s = lane(l, p); !s.ok()) return s;
    }
  }
  for (const auto& [seq, slot] : window_) {
    const bool waits = slot.state == Slot::kReady || slot.state == Slot::kBackoff;
    if (waits && !queued.count(seq)) {
      return fail("seq ", seq, " (topic '", slot.entry.record.topic, "') is ready in no lane");
    }
  }
  if (absl::Status s = settler_.Check(window_); !s.ok()) return s;
  for (const auto& kept : in_doubt_.found()) {
    if (window_.count(kept.first)) {
      return fail("copy found of seq ", kept.first, " kept while it is in the window");
    }
  }
  if (absl::Status s = in_doubt_.CheckInvariants(); !s.ok()) return s;
  if (absl::Status s =
          reader_.Check(window_.empty(), window_.empty() ? 0 : window_.rbegin()->first);
      !s.ok()) {
    return s;
  }
  // Expiry may take the window past its limits by a stated overshoot (ExpireUnread).
  if (window_.size() >
      options_.max_inflight_messages + kExpireOvershootMessages + window_.undecodable()) {
    return fail("the window holds ", window_.size(), " entries; the limit is ",
                options_.max_inflight_messages, " + ", kExpireOvershootMessages);
  }
  if (window_.bytes() > options_.max_inflight_bytes + kExpireOvershootBytes + largest) {
    return fail("the window holds ", window_.bytes(), " bytes; the limit is ",
                options_.max_inflight_bytes, " + ", kExpireOvershootBytes);
  }
  return absl::OkStatus();
}

std::string DrainLoop::DebugString() const {
  std::string out =
      absl::StrCat("window ", window_.size(), " entries / ", window_.bytes(), " bytes, cursor ",
                   reader_.cursor(), ", recheck below ", reader_.recheck_below(), ", producer ",
                   producer_ ? "up" : "none", "\n");
  const int64_t now = options_.clock->MonotonicMillis();
  for (const auto& [topic, ts] : topics_) {
    std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(topic);
    absl::StrAppend(
        &out, "  topic '", topic, "': ", layout->partition_count(), " partitions, routed by ",
        ts.routing.partitions, RerouteDue(ts, *layout) ? " (reroute due)" : "", ", in window ",
        ts.window.messages(), " / ", ts.window.bytes(), " bytes, unread from ", ts.unread.from,
        ", scan from ", ts.unread.scan_from, ", skipped lanes ", ts.unread.skipped_lanes.size(),
        ", unrouted ", ts.lanes.unrouted.ready.size(), "+", ts.lanes.unrouted.waiting.size(),
        ", unordered ", ts.lanes.unordered.ready.size(), "+", ts.lanes.unordered.waiting.size());
    for (const auto& [p, l] : ts.lanes.ordered) {
      if (!l.empty()) {
        absl::StrAppend(&out, ", p", p, " ", l.ready.size(), "+", l.waiting.size(), " ",
                        LaneWaitName(WhyLaneWaits(ts, p, *layout, now)));
      }
    }
    for (const auto& [p, n] : ts.lanes.in_kafka) {
      if (n > 0) absl::StrAppend(&out, ", in kafka p", p, " ", n);
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace kspool::agent
