// What the agent's maintenance and its operator do to the WAL beside the drain: idle
// topics forgotten (topic_forget), dead letters and delivery outcomes trimmed (trims),
// dead letters replayed (dead_replay).
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "tests/sim/simulation_internal.h"

namespace kspool::sim {

void Simulation::Maintain() {
  if (!wal_) return;
  // The agent's maintenance forgets idle topics once a second; here every 200 ms of
  // simulated time, between the drain's passes (no draw from the random stream).
  if (On(Fault::kTopicForget) && Mono() >= next_forget_mono_) {
    next_forget_mono_ = Mono() + 200;
    absl::StatusOr<std::vector<std::string>> gone = wal_->ForgetIdleTopics();
    if (gone.ok() && !gone->empty()) Injected("forgot idle topic " + gone->front());
  }
  // As the agent's maintenance (once a second there), between the drain's passes.
  if (On(Fault::kTrims) && Mono() >= next_trim_mono_) {
    next_trim_mono_ = Mono() + 250;
    absl::StatusOr<wal::DeadLetterTrim> dead = wal_->TrimDeadLetters();
    absl::StatusOr<wal::DeliveryTrim> index = wal_->TrimDeliveries();
    const uint64_t trimmed = (dead.ok() ? dead->by_size.count + dead->by_age.count : 0) +
                             (index.ok() ? index->messages : 0);
    if (trimmed > 0) Injected("trimmed " + std::to_string(trimmed) + " dead letters and outcomes");
  }
}

// An operator's `kspoolctl dead replay`: a few of the dead letters the model knows go
// back into the log under new sequence numbers, byte for byte. Each copy is a new entry
// of the model (its own seq, receive time and fate); the original stays discarded. The
// WAL refuses the whole call if one is gone (trimmed, or replayed already) or corrupt.
void Simulation::ReplayDeadLetters() {
  std::vector<wal::DeadLetter> dead;
  if (!wal_->ScanDeadLetters(0, 100'000, &dead).ok()) return;
  std::vector<uint64_t> candidates;  // those still kept (not trimmed) whose writer was told
  for (const wal::DeadLetter& d : dead) {
    auto id = by_seq_.find(d.seq);
    if (id != by_seq_.end() && entries_.at(id->second).discarded) candidates.push_back(d.seq);
  }
  if (candidates.empty()) return;
  std::vector<uint64_t> seqs;
  for (uint64_t n = 1 + Below(5); n > 0 && !candidates.empty(); --n) {
    const size_t i = Below(candidates.size());
    seqs.push_back(candidates[i]);
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::sort(seqs.begin(), seqs.end());
  // A closed WAL refuses before it writes: only a refusal of an open one may have kept
  // its write (the exemption below is no wider than that).
  const bool writes = wal_->health().ok();
  absl::StatusOr<std::vector<wal::ReplayedEntry>> r = wal_->ReplayDeadLetters(seqs);
  // The code only: a message names the temporary directory, and the digest must not.
  Injected("dead letters replayed: " + std::to_string(seqs.size()) +
           (r.ok() ? "" : " refused: " + absl::StatusCodeToString(r.status().code())));
  if (!r.ok()) Trace(r.status().ToString());
  if (!r.ok()) {
    if (writes && absl::IsUnavailable(r.status())) {
      // RocksDB may have kept the write. A copy that lands is known by the writer id in
      // its value, which a copy of a copy shares with the first entry.
      for (uint64_t seq : seqs) {
        replay_in_doubt_.insert(by_seq_.at(seq));
        uint64_t writer = 0;
        const std::string& value = entries_.at(by_seq_.at(seq)).value;
        if (std::sscanf(value.c_str(), "v%" SCNu64, &writer) == 1) replay_in_doubt_.insert(writer);
      }
    }
    return;
  }
  for (const wal::ReplayedEntry& re : *r) {
    replayed_.insert(re.dead_seq);
    ModelEntry copy = entries_.at(by_seq_.at(re.dead_seq));
    copy.acked = true;
    copy.landed = copy.discarded = false;
    copy.seq = re.seq;
    copy.receive_ms = re.receive_time_ms;
    copy.append_mono = Mono();
    const uint64_t id = next_id_++;
    entries_[id] = std::move(copy);
    by_seq_[re.seq] = id;
    open_[id] = &entries_[id];
    Mix(re.seq);
  }
  if (drain_) drain_->Notify();
}

}  // namespace kspool::sim
