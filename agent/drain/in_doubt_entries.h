// InDoubtEntries: what reconciliation holds for the drain (drain_reconcile.cc), in one
// owner. An entry is in doubt while it may be in Kafka without this process having been
// told: it was in the WAL when the drain started (below start()), or it is a suspect, an
// attempt of this process that may have landed unreported (in flight when the producer
// was replaced, or reported failed though possibly persisted), until it is settled. It
// also keeps the topics whose reconciliation was asked (once each: the Reconciler's
// contract), the suspects' rounds not asked yet, and the copies found for in-doubt
// entries the reader has not read yet (settled when read).
// The topics' gates (which partitions are released) stay with their lanes (TopicState).
// Owned by the drain's loop thread; not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "agent/drain/reconciler.h"

namespace kspool::agent {

class InDoubtEntries {
 public:
  // A suspect topic's round to ask: its oldest suspect's receive time, and why.
  struct RoundDue {
    int64_t oldest_receive_ms = 0;
    const char* why = "";
  };
  // A copy found for an entry not read yet.
  struct FoundLater {
    std::string topic;
    FoundCopy copy;
  };

  // At the drain's start: entries below `next_seq` were in the WAL (0: none is in doubt
  // since the start, as without a reconciler).
  void Start(uint64_t next_seq) { start_ = next_seq; }
  uint64_t start() const { return start_; }

  bool InDoubt(uint64_t seq) const { return seq < start_ || IsSuspect(seq); }
  bool IsSuspect(uint64_t seq) const { return !suspects_.empty() && suspects_.count(seq) > 0; }

  // True once per topic, for its first entry offered that is in doubt since the start:
  // then its reconciliation is asked.
  bool FirstAsk(std::string_view topic, uint64_t seq) {
    if (seq >= start_ || asked_.count(topic)) return false;
    asked_.emplace(topic);
    return true;
  }
  bool Asked(std::string_view topic) const { return asked_.count(topic) > 0; }

  // `seq` of `topic`, received at `receive_ms`, became a suspect: its topic needs a new
  // round. Returns the round's number (each suspect's a new one).
  uint64_t Suspect(uint64_t seq, std::string_view topic, int64_t receive_ms, const char* why) {
    suspects_.insert(seq);
    auto [due, fresh] = rounds_due_.try_emplace(std::string(topic), RoundDue{receive_ms, why});
    if (!fresh) due->second.oldest_receive_ms = std::min(due->second.oldest_receive_ms, receive_ms);
    return ++rounds_;
  }
  bool RoundsDue() const { return !rounds_due_.empty(); }
  // The rounds due, handed over once.
  std::map<std::string, RoundDue, std::less<>> TakeRoundsDue() { return std::exchange(rounds_due_, {}); }

  // Settled (delivered or discarded): no longer a suspect.
  void Settled(uint64_t seq) {
    if (!suspects_.empty()) suspects_.erase(seq);
  }

  // Copies found for entries not read yet.
  void KeepFound(uint64_t seq, std::string topic, const FoundCopy& copy) {
    found_[seq] = {std::move(topic), copy};
  }
  // The copy kept for `seq`, if any, no longer kept.
  std::optional<FoundCopy> TakeFound(uint64_t seq) {
    auto f = found_.find(seq);
    if (f == found_.end()) return std::nullopt;
    FoundCopy copy = f->second.copy;
    found_.erase(f);
    return copy;
  }
  const std::map<uint64_t, FoundLater>& found() const { return found_; }
  // Drops the kept copies `gone` says can no longer be read, at most every `every_ms`.
  template <typename Gone>
  void PruneFound(int64_t now, int64_t every_ms, Gone gone) {
    if (found_.empty() || now < next_prune_ms_) return;
    next_prune_ms_ = now + every_ms;
    for (auto it = found_.begin(); it != found_.end();) {
      it = gone(it->first, it->second.topic) ? found_.erase(it) : std::next(it);
    }
  }

  // What must always hold: a kept copy is for an entry in doubt.
  absl::Status CheckInvariants() const {
    for (const auto& [seq, f] : found_) {
      if (!InDoubt(seq)) {
        return absl::InternalError("a copy kept for seq " + std::to_string(seq) +
                                   ", which is not in doubt");
      }
    }
    return absl::OkStatus();
  }

 private:
  uint64_t start_ = 0;
  std::set<uint64_t> suspects_;
  std::set<std::string, std::less<>> asked_;
  uint64_t rounds_ = 0;  // ReconcileAgain requests made
  std::map<std::string, RoundDue, std::less<>> rounds_due_;
  std::map<uint64_t, FoundLater> found_;
  int64_t next_prune_ms_ = 0;
};

}  // namespace kspool::agent
