// RocksWal::Settle: removes settled entries, counts their outcomes, keeps the discarded
// ones as dead letters, splits the counts for the discard report, indexes the outcomes
// and raises the partitions' watermarks, all in one synced write batch (the contracts:
// drain_log.h, settled_watermarks.h).
//
// The log is used as a queue, so deletes pile up at its head: each settled entry (or batch
// record whose last live message is settled: settle_in_log.h) gets a point tombstone in
// the settle's batch, never a range tombstone (RocksDB 7.8.3 aborts
// when a compaction of range deletions alone fails to sync its empty output: FORMAT.md,
// "Deletes"). Scans start at the head (iterate_lower_bound), so the tombstones below it
// cost space until compaction, not reads.
// Which outcomes count (live entries only: idempotence) is rocks_wal_live.cc; charging an
// unreadable record's discard to its owner is rocks_wal_attribute.cc.
#include <algorithm>
#include <map>
#include <optional>

#include "wal/keys.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"
#include "wal/settle_in_log.h"

namespace kspool::wal {

absl::Status RocksWal::Settle(const std::vector<Outcome>& given) {
  if (given.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(CheckSettleable(given));
  MutexLock settle(&settle_mu_);
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  uint64_t head;
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
    head = ledger_.head();
  }
  // Only outcomes of live entries count (idempotence; rocks_wal_live.cc).
  std::vector<uint64_t> seqs;  // sorted, unique
  std::vector<Outcome> kept;
  ASSIGN_OR_RETURN(const std::vector<Outcome>* live, LiveOutcomes(given, &seqs, &kept));
  if (seqs.empty()) return absl::OkStatus();
  // A record that does not decode is charged to the topic whose ledger owns it.
  std::vector<Outcome> attributed;
  ASSIGN_OR_RETURN(const std::vector<Outcome>* charged, AttributeUnreadable(*live, &attributed));
  const std::vector<Outcome>& outcomes = *charged;
  // The head moves over the settled prefix [head, cand): the entries settled now and
  // those settled out of order before.
  uint64_t cand = head;
  size_t i = std::lower_bound(seqs.begin(), seqs.end(), head) - seqs.begin();
  while (true) {
    if (i < seqs.size() && seqs[i] == cand) {
      ++cand;
      ++i;
    } else if (uint64_t end = deleted_above_head_.RunEnd(cand); end > cand) {
      cand = end;
      while (i < seqs.size() && seqs[i] < cand) ++i;
    } else {
      break;
    }
  }
  rocksdb::WriteBatch wb;
  const int64_t now_ms = options_.clock->NowMillis();
  if (cand > head) wb.Put(db_->meta, keys::kHead, keys::U64(cand));
  HeldChange held;  // bytes part-settled records keep on disk, per topic
  RETURN_IF_ERROR(SettleInLog(*db_, seqs, &wb, &held));  // deletes, or bits in part-settled records
  uint64_t bytes = 0;
  for (const Outcome& o : outcomes) bytes += o.size;
  const Counts added = dead_letters_.Keep(outcomes, now_ms, *db_, &wb);
  // A charged record that no longer verifies is deleted (HeldChange): whose its held
  // messages were is unknown, so every topic's held count is recounted from the bitmaps
  // as they are after this batch: as read now (skipping that record), with this batch's
  // change. Rare (a byte changed on disk), and bounded by the part-settled records.
  std::optional<std::map<std::string, Counts>> recounted;
  if (held.unreadable_released > 0) {
    BitmapCheck bits;
    RETURN_IF_ERROR(ReadBitmaps(*db_, nullptr, &bits));
    recounted = std::move(bits.held);
    for (const auto& [topic, c] : held.added) (*recounted)[topic].Add(c);
    for (const auto& [topic, c] : held.released) {
      Counts& r = (*recounted)[topic];
      r.count -= std::min(r.count, c.count);
      r.bytes -= std::min(r.bytes, c.bytes);
    }
  }
  // New totals of the touched counters, aggregated per (topic, outcome) first: a batch
  // holds thousands of messages but only a few topics.
  std::map<std::string, TopicStats> totals;
  std::vector<std::string> held_topics;  // whose held bytes change (written below)
  std::pair<uint64_t, uint64_t> held_delta;  // bytes held now, bytes no longer held
  Counts dead;  // the dead letters' totals after this batch
  {
    MutexLock l(&mu_);
    const Counts before = dead_letters_.totals();
    dead = {before.count + added.count, before.bytes + added.bytes};
    const Outcome* last = nullptr;
    Counts* last_counts = nullptr;
    for (const Outcome& o : outcomes) {
      if (!last || o.topic != last->topic || o.state != last->state ||
          o.discard_reason != last->discard_reason) {
        auto [it, fresh] = totals.try_emplace(o.topic);
        if (fresh) {
          auto t = ledger_.topics().find(o.topic);
          if (t != ledger_.topics().end()) it->second = t->second;
        }
        last_counts =
            o.delivered() ? &it->second.delivered : &it->second.discarded[o.discard_reason];
        last = &o;
      }
      last_counts->count += 1;
      last_counts->bytes += o.size;
    }
    if (recounted) {
      // The change that takes each topic's held count to the recount: all it had
      // released, all it has added (the loop below adds first).
      held = HeldChange{};
      for (const auto& [topic, t] : ledger_.topics()) {
        if (t.held.count > 0 || t.held.bytes > 0) recounted->try_emplace(topic);
      }
      for (const auto& [topic, want] : *recounted) {
        Counts have;
        if (auto t = ledger_.topics().find(topic); t != ledger_.topics().end())
          have = t->second.held;
        if (have.count == want.count && have.bytes == want.bytes) continue;
        held.added[topic] = want;
        held.released[topic] = have;
      }
    }
    // The held bytes' new totals: what a stuck message keeps of its record on disk is
    // charged to its topic until the record goes (Ledger::Admit).
    // (No lambda reads ledger_ here: -Wthread-safety cannot see mu_ held inside one.)
    for (const auto* change : {&held.added, &held.released}) {
      const bool added_now = change == &held.added;
      for (const auto& [topic, c] : *change) {
        auto [it, fresh] = totals.try_emplace(topic);
        if (fresh) {
          auto t = ledger_.topics().find(topic);
          if (t != ledger_.topics().end()) it->second = t->second;
        }
        held_topics.push_back(topic);
        Counts& h = it->second.held;
        if (added_now) {
          h.count += c.count;
          h.bytes += c.bytes;
          held_delta.first += c.bytes;
        } else {  // saturating: a WAL written before held/ existed starts at 0
          held_delta.second += std::min(h.bytes, c.bytes);
          h.count -= std::min(h.count, c.count);
          h.bytes -= std::min(h.bytes, c.bytes);
        }
      }
    }
  }
  for (const std::string& topic : held_topics) {
    wb.Put(db_->meta, keys::Held(topic), keys::EncodeCounts(totals[topic].held));
  }
  for (const auto& [topic, t] : totals) {
    wb.Put(db_->meta, keys::Delivered(topic), keys::EncodeCounts(t.delivered));
    for (const auto& [reason, c] : t.discarded) {
      wb.Put(db_->meta, keys::Discarded(topic, reason), keys::EncodeCounts(c));
    }
  }
  if (added.count > 0) wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  ReportSplit::Change split;
  {
    MutexLock l(&mu_);
    report_.Split(outcomes, lease_.saved().global_ms + 1, db_->meta, &wb, &split);
  }
  const Counts index = delivery_index_.Index(outcomes, now_ms, *db_, &wb);
  const WatermarkStore::Raised raised = watermarks_.Plan(outcomes, *db_, &wb);
  uint64_t tallies_restarted = 0;
  ASSIGN_OR_RETURN(TallyStore::Planned tallied,
                   tallies_.Plan(outcomes, *db_, &wb, &tallies_restarted));
  rocksdb::Status s = SyncedWrite(&wb);
  if (!s.ok()) {
    RecordWriteError(s, "settle");
    return FromRocks(s, "settle WAL entries");
  }

  watermarks_.Apply(raised);
  tallies_.Apply(std::move(tallied));
  tallies_restarted_.fetch_add(tallies_restarted);
  uint64_t limit;
  {
    MutexLock l(&mu_);
    ledger_.NoteSettled(totals, bytes, held_delta.first, held_delta.second);
    dead_letters_.SetTotals(dead);
    delivery_index_.SetTotals(index);
    report_.Apply(std::move(split));
    limit = tail_.committed_next();
  }
  // Entries below cand are gone; a gap (a failed append, or entries deleted before a
  // restart) is skipped by seeking to the next live one.
  for (size_t k = i; k < seqs.size(); ++k) deleted_above_head_.Add(seqs[k]);
  // If that seek fails (a read error, a block that fails its checksum), the head stays at
  // cand and the settle still succeeds: its batch is durable, and every entry below cand
  // is settled, so cand is a true lower bound of the live entries. Taking the error for
  // "nothing live" would put the head past entries that were never delivered: scans
  // start at the head, so they would never be read. A head left on a gap costs nothing:
  // scans and later settles pass over it (deleted_above_head_).
  absl::StatusOr<std::optional<uint64_t>> first = FirstLiveAtOrAfter(cand, limit);
  const uint64_t new_head = !first.ok() ? cand : first->value_or(limit);
  deleted_above_head_.EraseBelow(new_head);
  MutexLock l(&mu_);
  ledger_.RaiseHead(new_head);
  known_gaps_.ForgetBelow(ledger_.head());
  return absl::OkStatus();
}

}  // namespace kspool::wal
