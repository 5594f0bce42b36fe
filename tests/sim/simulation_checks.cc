// The simulation's invariants, checked after every step (the first broken one ends the
// run):
//  1. the drain's own recount of its window (DrainLoop::CheckInvariants);
//  2. what lands in Kafka is the value that was appended (no freed or reused buffers);
//  3. per-key order per partition: a key's entry never lands after a later entry of the
//     same key landed there, unless it landed before, there or in another partition of
//     the topic (a duplicate after a crash or a lost report is allowed, a reorder is not);
//  4. nothing acknowledged leaves the WAL before it landed in Kafka or was discarded
//     with a reason;
//  5. the commit points never decrease (also across restarts) and never reach the
//     receive time of an entry still in the WAL;
//  6. with --max-message-age, no entry older than it by more than kAgeSlackMs waits
//     undelivered and undiscarded, whatever its partition's state (an entry that only a
//     step of the wall clock made that old gets kAgeSlackMs from the step). Exemption:
//     while its topic is held for reconciliation (DrainLoop::Reconciling: after a
//     restart, or a suspect round), an entry that may be in Kafka already must not
//     expire (expiring it would report a delivered message discarded), and the
//     simulation cannot tell those from outside, so every entry of a held topic gets the
//     bound again from the hold's end. No defect hides there: a held entry is neither
//     produced nor discarded, the simulated reconciler answers within kAnswerMs once the
//     topic's partitions have leaders, and check 7 still bounds a topic whose partitions
//     are healthy;
//  7. isolation and liveness: an entry of a topic whose partitions all have leaders (no
//     metadata failure, no injected error, no producer lagging behind a partition
//     change) lands or is discarded within kLiveBoundMs of when it was appended or of
//     the last fault that concerned its topic or the whole agent, while other topics
//     may be stuck; after the heal, plus the time the window needs to work off the
//     backlog the heal found (CarryMsPerEntry() per entry, over the window's entries: a
//     window of one entry carries about 190 in 30 s, and faulty topics may have piled up
//     more; without the allowance a seed fails for its backlog, whatever the drain does);
//  8. at the end, after the faults are healed: every acknowledged entry landed or was
//     discarded with a reason (nothing acknowledged is lost);
//  9. an entry that landed in Kafka (before a crash, or unreported) is never settled as
//     discarded (Learn). Not checked for a topic deleted and recreated meanwhile (its
//     copies are gone with it) nor when reconciliation checks are off (check_reconcile);
// 10. the books after every step (CheckBooks): per topic, pending equals the live entries a
//     scan finds, the held bytes equal what the bitmaps say, and no bitmap is an orphan,
//     of another length, or all set;
// 11. exactly once inside one process: a sequence number settled as delivered is never
//     produced again before a crash (OnProduce);
// 12. the delivery index (GetDeliveryStatus) agrees with the log and the model, across
//     trims, replays, reopens and power cuts (CheckDeliveryIndex).
#include "agent/drain/discard_reasons.h"
#include "tests/sim/simulation_internal.h"

namespace kspool::sim {

void Simulation::NoteInKafkaAtOpen() {
  in_kafka_at_open_.clear();
  for (const auto& [name, t] : kafka_.topics()) {
    for (size_t p = 0; p < t.partitions.size(); ++p) {
      const std::vector<Landed>& log = t.partitions[p].log;
      for (size_t off = 0; off < log.size(); ++off) {
        in_kafka_at_open_.try_emplace(log[off].seq, Where{name, static_cast<int32_t>(p), off});
      }
    }
  }
}

void Simulation::OnProduce(uint64_t seq) {
  if (!drain_) return;
  // Check 11: exactly once inside one process. An entry settled as delivered left the
  // WAL in that synced write: nothing may read and produce it again.
  if (settled_delivered_.count(seq)) {
    Fail("seq " + std::to_string(seq) + " was settled as delivered and produced again by the "
         "same process");
    return;
  }
  if (auto u = kafka_.unreported_copies.find(seq); u != kafka_.unreported_copies.end()) {
    // A copy the drain was not told of (lost with a replaced producer, or reported failed
    // though possibly persisted): the drain must find it before it produces again.
    const SimKafka::Copy& c = u->second;
    auto t = kafka_.topics().find(c.topic);
    if (cfg_.check_reconcile && !recreated_.count(c.topic) && t != kafka_.topics().end() &&
        t->second.exists && c.partition < static_cast<int32_t>(t->second.partitions.size())) {
      const std::vector<Landed>& log = t->second.partitions[static_cast<size_t>(c.partition)].log;
      if (c.offset < log.size() && log[c.offset].seq == seq) {
        Fail("reconciliation: seq " + std::to_string(seq) + ", in Kafka at " + c.topic + "/" +
             std::to_string(c.partition) + "@" + std::to_string(c.offset) +
             " and never reported delivered, was produced again");
        return;
      }
    }
  }
  if (seq >= drain_->in_doubt_below()) return;
  auto it = in_kafka_at_open_.find(seq);
  if (it == in_kafka_at_open_.end()) return;
  ++reproduced_checked_;
  const Where& w = it->second;
  if (recreated_.count(w.topic)) return;
  auto t = kafka_.topics().find(w.topic);
  if (t == kafka_.topics().end() || !t->second.exists ||
      w.partition >= static_cast<int32_t>(t->second.partitions.size())) {
    return;  // the topic was deleted since: that copy is gone
  }
  const std::vector<Landed>& log = t->second.partitions[static_cast<size_t>(w.partition)].log;
  if (w.offset < log.size() && log[w.offset].seq == seq && cfg_.check_reconcile) {
    Fail("reconciliation: seq " + std::to_string(seq) + ", in Kafka at " + w.topic + "/" +
         std::to_string(w.partition) + "@" + std::to_string(w.offset) +
         " when the agent restarted, was produced again");
  }
}

void Simulation::OnLand(const std::string& topic, int32_t partition, const Landed& l) {
  Mix(l.seq);
  Mix(static_cast<uint64_t>(partition));
  // An acknowledged seq is its model entry (a replayed dead letter's copy has the value
  // of its original, under a seq of its own); an unacknowledged one (its append failed,
  // RocksDB kept it) is found by the writer id in its value.
  uint64_t id = 0;
  if (auto acked = by_seq_.find(l.seq); acked != by_seq_.end()) {
    id = acked->second;
  } else if (l.value.size() < 2 || l.value[0] != 'v' ||
             !(std::istringstream(l.value.substr(1)) >> id) || !entries_.count(id)) {
    Fail("corrupt data in Kafka: seq " + std::to_string(l.seq) + " landed with an unknown value");
    return;
  }
  ModelEntry& e = entries_[id];
  if (e.value != l.value || e.topic != topic) {
    Fail("corrupt data in Kafka: seq " + std::to_string(l.seq) + " landed with another value");
  }
  if (e.acked && e.seq != l.seq) {
    // Exemption: a replay of this dead letter failed (UNAVAILABLE), and RocksDB may have
    // kept its write: the copy has a seq the model never learned. No defect hides here:
    // the value is byte for byte the original's (checked above), the original stays
    // discarded and is not marked landed, and a replay that failed otherwise is not
    // exempt.
    if (replay_in_doubt_.count(id)) return;
    Fail("seq " + std::to_string(l.seq) + " landed with the value of seq " + std::to_string(e.seq));
  }
  const bool landed_before = e.landed;
  e.landed = true;
  if (!l.key) return;
  KeyOrder& k = order_[{topic, partition, *l.key}];
  // A duplicate: here, or in another partition before the topic's partition count
  // changed (produced again after a crash, it goes to its key's partition of now).
  if (k.seen.count(l.seq) || landed_before) return;
  if (l.seq < k.max_seq) {
    Fail("per-key order: key " + *l.key + " of " + topic + "/" + std::to_string(partition) +
         " received seq " + std::to_string(l.seq) + " after seq " + std::to_string(k.max_seq));
  }
  k.seen.insert(l.seq);
  k.max_seq = std::max(k.max_seq, l.seq);
}

void Simulation::Learn(const std::vector<wal::Outcome>& outcomes) {
  for (const wal::Outcome& o : outcomes) {
    if (!o.discarded()) continue;
    auto s = by_seq_.find(o.seq);
    if (s == by_seq_.end()) continue;  // not acknowledged to its writer
    ModelEntry& e = entries_[s->second];
    // Check 9: a message Kafka holds is never accounted discarded: the discard report would
    // count a delivered message as lost, and a dead-letter replay would make a duplicate.
    // Exempt: an entry whose stored record was changed (record_corruption), discarded
    // as corrupt. Its bytes no longer say what it holds, so no reconciliation can match
    // the copy Kafka has; the dead letters keep the bytes as stored. Only the entries of
    // the record changed, and only that reason: any other discard of them still fails.
    const bool corrupt = e.corrupted && o.discard_reason == agent::kReasonCorrupt;
    if (e.landed && !e.discarded && !corrupt && cfg_.check_reconcile &&
        !recreated_.count(e.topic)) {
      Fail("seq " + std::to_string(o.seq) + " (topic " + e.topic + ") is in Kafka and was " +
           "settled as discarded (" + o.discard_reason + ")");
      return;
    }
    if (!e.discarded) {
      e.discarded = true;
      ++discarded_;
      Mix(o.seq);
      MixStr(o.discard_reason);
    }
  }
}

void Simulation::CheckWal() {
  std::vector<wal::Entry> live;
  if (!wal_ || !wal_->health().ok() || !wal_->Scan(0, 1u << 30, 1u << 30, &live).ok()) return;
  std::map<uint64_t, const wal::Entry*> by_seq;
  for (const wal::Entry& e : live) by_seq[e.seq] = &e;
  for (const auto& [id, entry] : open_) {
    const ModelEntry& e = *entry;
    if (!Done(e) && !by_seq.count(e.seq)) {
      Fail("seq " + std::to_string(e.seq) + " (topic " + e.topic +
           ") left the WAL before Kafka acknowledged it or it was discarded");
      return;
    }
  }
  CheckBooks(live);
  CheckDeliveryIndex(by_seq);
  const wal::CommitPoints cp = tracker_->Current();
  if (cp.global_ms < last_points_.global_ms) {
    Fail("the global commit point went back from " + std::to_string(last_points_.global_ms) +
         " to " + std::to_string(cp.global_ms));
  }
  for (const auto& [topic, ms] : cp.topics_ms) {
    auto old = last_points_.topics_ms.find(topic);
    if (old != last_points_.topics_ms.end() && ms < old->second) {
      Fail("the commit point of " + topic + " went back from " + std::to_string(old->second) +
           " to " + std::to_string(ms));
    }
  }
  for (const wal::Entry& e : live) {
    if (!e.status.ok()) continue;
    const int64_t rt = e.record.receive_time_ms;
    auto t = cp.topics_ms.find(e.record.topic);
    if (cp.global_ms >= rt || (t != cp.topics_ms.end() && t->second >= rt)) {
      Fail("a commit point reached the receive time " + std::to_string(rt) + " of seq " +
           std::to_string(e.seq) + ", still in the WAL (global " + std::to_string(cp.global_ms) +
           ", topic " + e.record.topic + " " +
           (t == cp.topics_ms.end() ? std::string("none") : std::to_string(t->second)) + ")");
      break;
    }
  }
  if (cp.global_ms != 0) last_points_.global_ms = cp.global_ms;
  for (const auto& [topic, ms] : cp.topics_ms) last_points_.topics_ms[topic] = ms;
}

void Simulation::CheckBooks(const std::vector<wal::Entry>& live) {
  // Check 10: the books, from the log itself. Per topic, pending (accepted - delivered -
  // discarded) equals the live entries a scan finds, and the held bytes equal what the
  // bitmaps of part-settled records say, across partial settles, failed syncs, power
  // cuts and reopens. With an unreadable entry (no topic to count it under) only the
  // totals compare.
  const wal::Stats st = wal_->GetStats();
  std::map<std::string, wal::Counts> found;
  bool unreadable = false;
  for (const wal::Entry& e : live) {
    if (!e.status.ok()) unreadable = true;
    wal::Counts& c = found[e.status.ok() ? e.record.topic : std::string()];
    c.count += 1;
    c.bytes += e.size;
  }
  wal::Counts want_total, have_total;
  for (const auto& [topic, ts] : st.topics) {
    const wal::Counts want = ts.pending();
    const wal::Counts have = found.count(topic) ? found[topic] : wal::Counts{};
    want_total = {want_total.count + want.count, want_total.bytes + want.bytes};
    if (!unreadable && (want.count != have.count || want.bytes != have.bytes)) {
      Fail("books: topic " + topic + " counts " + std::to_string(want.count) + " pending (" +
           std::to_string(want.bytes) + " bytes), the log holds " + std::to_string(have.count) +
           " (" + std::to_string(have.bytes) + " bytes)");
      return;
    }
  }
  for (const auto& [topic, c] : found) have_total = {have_total.count + c.count, have_total.bytes + c.bytes};
  if (want_total.count != have_total.count) {
    Fail("books: the counters say " + std::to_string(want_total.count) + " pending, the log holds " +
         std::to_string(have_total.count));
    return;
  }
  absl::StatusOr<wal::BitmapCheck> bits = wal_->CheckBitmaps();
  if (!bits.ok()) return;  // a read fault of this step: the next step looks again
  if (!bits->orphans.empty() || !bits->bad_length.empty() || !bits->all_set.empty()) {
    Fail("books: bitmap problems: " + std::to_string(bits->orphans.size()) + " orphans, " +
         std::to_string(bits->bad_length.size()) + " of another length, " +
         std::to_string(bits->all_set.size()) + " all set");
    return;
  }
  for (const auto& [topic, ts] : st.topics) {
    auto h = bits->held.find(topic);
    const wal::Counts have = h == bits->held.end() ? wal::Counts{} : h->second;
    if (bits->unreadable.empty() && (ts.held.count != have.count || ts.held.bytes != have.bytes)) {
      Fail("books: topic " + topic + " counts " + std::to_string(ts.held.count) +
           " held messages, the bitmaps " + std::to_string(have.count));
      return;
    }
  }
}

void Simulation::CheckDeliveryIndex(const std::map<uint64_t, const wal::Entry*>& live) {
  // Check 12: what GetDeliveryStatus answers agrees with the log and the model, across
  // trims, replays, reopens and power cuts: PENDING exactly for a live entry, never
  // DELIVERED for one the model knows discarded and never in Kafka. Up to 64 acknowledged
  // seqs, spread evenly over all (no draw from the random stream).
  if (by_seq_.empty()) return;
  std::vector<uint64_t> seqs;
  const size_t stride = std::max<size_t>(1, by_seq_.size() / 64);
  size_t i = 0;
  for (const auto& [seq, id] : by_seq_) {
    if (i++ % stride == 0) seqs.push_back(seq);
  }
  std::vector<wal::Outcome> outcomes;
  if (!wal_->LookupDeliveries(seqs, &outcomes).ok()) return;  // a read fault of this step
  for (size_t k = 0; k < seqs.size() && k < outcomes.size(); ++k) {
    const wal::Outcome& o = outcomes[k];
    const ModelEntry& e = entries_.at(by_seq_.at(seqs[k]));
    const bool pending = o.state == wal::Outcome::State::kPending;
    if (pending != (live.count(seqs[k]) > 0)) {
      Fail("delivery index: seq " + std::to_string(seqs[k]) + " is " +
           (pending ? "PENDING but not in the log"
                    : "in the log but not PENDING (" + o.error + ")"));
      return;
    }
    if (o.delivered() && e.discarded && !e.landed) {
      Fail("delivery index: seq " + std::to_string(seqs[k]) +
           " is DELIVERED, but it was discarded and never reached Kafka");
      return;
    }
  }
}

void Simulation::Check() {
  const int64_t now = Mono();
  for (const std::string& t : topics_) {
    auto f = kafka_.last_fault_ms.find(t);
    if (!kafka_.TopicHealthy(t, now) || (f != kafka_.last_fault_ms.end() && f->second > topic_fault_ms_[t])) {
      topic_fault_ms_[t] = now;
    }
  }
  if (now < kafka_.queue_full_until || (wal_ && !wal_->health().ok()) || !drain_) {
    global_fault_ms_ = now;
  }
  if (drain_) {
    if (absl::Status s = drain_->CheckInvariants(); !s.ok()) Fail("drain invariant: " + s.ToString());
  }
  CheckWal();
  if (drain_) {
    for (const agent::ReconcilingTopic& r : drain_->Reconciling()) reconcile_held_mono_[r.topic] = now;
  }
  const int64_t wall = clock_.NowMillis();
  for (auto it = open_.begin(); it != open_.end();) {
    const ModelEntry& e = *it->second;
    if (Done(e)) {
      it = open_.erase(it);
      continue;
    }
    ++it;
    // Once healing, also the time the drain takes to read the backlog at scan_max_keys
    // keys a pass (as check 7): it expires only what it has read, and an entry behind
    // thousands of older ones at 4-63 keys a pass is read tens of seconds after the heal
    // (seed 576429685056 with wide_batches: 21 s). Not a hole: the allowance is the
    // backlog's read time at heal, finite, so an entry the drain never reads still fails.
    const int64_t age_bound =
        static_cast<int64_t>(opts_.max_message_age_ms) + kAgeSlackMs + heal_read_ms_;
    // A wall-clock step ages entries at once; those in the client then leave at its
    // message timeout (at most the age limit, on the monotonic clock), so after a step
    // every entry gets the whole bound again.
    auto held = reconcile_held_mono_.find(e.topic);
    const int64_t held_ms = held == reconcile_held_mono_.end() ? 0 : held->second;
    const bool aged_by_step =
        now - std::max({e.append_mono, clock_step_mono_, held_ms}) <= age_bound;
    if (opts_.max_message_age_ms > 0 && !aged_by_step && wall - e.receive_ms > age_bound) {
      Fail("max-message-age: seq " + std::to_string(e.seq) + " (topic " + e.topic + ") is " +
           std::to_string(wall - e.receive_ms) + " ms old, neither delivered nor discarded");
      break;
    }
    const int64_t since = std::max({e.append_mono, topic_fault_ms_[e.topic], global_fault_ms_});
    if (now - since > kLiveBoundMs + heal_allowance_ms_) {
      Fail("liveness: seq " + std::to_string(e.seq) + " of healthy topic " + e.topic +
           " undelivered " + std::to_string(now - since) + " ms after its topic's last fault");
      break;
    }
  }
}

}  // namespace kspool::sim
