// RocksWal: the dead letters, by its DeadLetterStore (dead_letter_store.h): reading them
// (Inspection::ScanDeadLetters) and keeping them within their own limits
// (Maintenance::TrimDeadLetters). Settle() keeps the discarded entries
// (rocks_wal_settle.cc); kspoolctl replays and purges them (rocks_wal_dead_admin.cc).
//
// Dead letters count against the WAL's capacity, so without a limit of their own a
// stream of permanent errors would end up refusing every Send. A removed dead letter
// was counted as discarded when it was discarded, and stays so: the ledger
// accepted = delivered + discarded + pending is unchanged. It is counted a second time,
// per topic and limit, in `dead_dropped/<topic>/<limit>`, in the same batch that
// removes it.
#include "wal/keys.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"

namespace kspool::wal {

absl::StatusOr<DeadLetterTrim> RocksWal::TrimDeadLetters() {
  if (!dead_letters_.has_limits()) return DeadLetterTrim();
  MutexLock settle(&settle_mu_);  // the only writers of `dead` and its totals hold it
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
  }
  rocksdb::WriteBatch wb;
  ASSIGN_OR_RETURN(DeadLetterStore::Trim trim, dead_letters_.PlanTrim(*db_, &wb));
  if (wb.Count() == 0) return trim.removed;
  auto& dropped = trim.dropped;
  {
    MutexLock l(&mu_);
    // A dead letter of a topic whose counters were folded (Ledger::PlanFold) is counted
    // under kForgottenTopics, with them: a name the ledger dropped does not come back.
    for (auto it = dropped.begin(); it != dropped.end();) {
      if (it->first == kForgottenTopics || ledger_.topics().count(it->first)) {
        ++it;
        continue;
      }
      for (const auto& [limit, c] : it->second) dropped[kForgottenTopics][limit].Add(c);
      it = dropped.erase(it);
    }
    for (auto& [topic, by_limit] : dropped) {
      for (auto& [limit, c] : by_limit) {
        auto t = ledger_.topics().find(topic);
        if (t != ledger_.topics().end()) {
          auto prev = t->second.dead_dropped.find(limit);
          if (prev != t->second.dead_dropped.end()) {
            c.count += prev->second.count;
            c.bytes += prev->second.bytes;
          }
        }
        wb.Put(db_->meta, keys::DeadDropped(topic, limit), keys::EncodeCounts(c));
      }
    }
  }
  // Not synced: if the write is lost, the dead letters are back and counted as before.
  rocksdb::Status s = db_->db->Write(rocksdb::WriteOptions(), &wb);
  if (!s.ok()) {
    RecordWriteError(s, "dead-letter trim");
    return FromRocks(s, "trim dead letters");
  }
  dead_letters_.NoteTrimmed(trim);
  MutexLock l(&mu_);
  dead_letters_.SetTotals(trim.totals);
  ledger_.NoteDeadDropped(dropped);
  return trim.removed;
}

absl::Status RocksWal::ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                                       std::vector<DeadLetter>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  return dead_letters_.Scan(*db_, from_seq, max_entries, out);
}

}  // namespace kspool::wal
