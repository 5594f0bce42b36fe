// SettleInLog (settle_in_log.h): one iterator walks the records holding the settled
// numbers in order, seeking only when a number is past the record under it, so a settle
// of a partition's messages reads each record it touches once.
#include "wal/settle_in_log.h"

#include <memory>
#include <optional>
#include <string>

#include "wal/keys.h"
#include "wal/record.h"
#include "wal/rocks_status.h"
#include "wal/settled_bits.h"
#include "wal/settled_bits_merge.h"

namespace kspool::wal {
namespace {

// The settles of one batch record, gathered before its writes are added.
struct Touched {
  std::string key;
  LogKey rec;
  SettledBits now;  // the messages this settle settles
};

// Adds to `*to` the messages of `t`'s record (`value`, its bytes) whose bits `pick` says;
// nothing for a record that does not verify (HeldChange), and then false. Only a record
// settled in parts pays the parse, not the common one settled whole at once.
template <typename Pick>
bool CountHeld(const Touched& t, std::string_view value, Pick pick,
               std::map<std::string, Counts>* to) {
  absl::StatusOr<BatchView> view = ParseBatch(value, t.rec.count);
  if (!view.ok()) return false;
  Counts* c = nullptr;
  for (uint32_t i = 0; i < t.rec.count; ++i) {
    if (!pick(i)) continue;
    if (!c) c = &(*to)[std::string(view->topic)];
    c->count += 1;
    c->bytes += view->MessageSize(i);
  }
  return true;
}

// Adds the writes for `t`. A record whose messages are all settled by this one settle
// had none settled before (each number given is live), so it has no bitmap to read or
// delete: the common case costs one tombstone and no read.
absl::Status Write(const OpenDb& db, const Touched& t, std::string_view value,
                   rocksdb::WriteBatch* wb, HeldChange* held) {
  if (t.now.all()) {
    wb->Delete(db.log, t.key);
    // Each number given is live, so no bit was set before; a bitmap can still be stored
    // if it had another length (it settles nothing, SettledBits::Parse). Deleted blindly
    // (no read), or it would outlive its record.
    wb->Delete(db.meta, keys::SettledIn(t.key));
    return absl::OkStatus();
  }
  std::string stored;
  const rocksdb::Status s =
      db.db->Get(rocksdb::ReadOptions(), db.meta, keys::SettledIn(t.key), &stored);
  if (!s.ok() && !s.IsNotFound()) {
    return FromRocks(s, "read which messages of WAL record " + std::to_string(t.rec.first_seq) +
                            ".." + std::to_string(t.rec.first_seq + t.rec.count - 1) +
                            " are settled");
  }
  SettledBits before(t.rec.count);
  if (s.ok()) SettledBits::Parse(stored, t.rec.count, &before);  // another length: none settled
  // The bits this settle sets: a bit set before is not set again (a settle applied twice).
  SettledBits added(t.rec.count);
  for (uint32_t i = 0; i < t.rec.count; ++i) {
    if (t.now.Test(i) && !before.Test(i)) added.Set(i);
  }
  if (before.set() + added.set() == t.rec.count) {
    wb->Delete(db.log, t.key);
    if (s.ok()) wb->Delete(db.meta, keys::SettledIn(t.key));
    // Its earlier settled messages leave the disk with it.
    auto earlier = [&](uint32_t i) { return before.Test(i) && !t.now.Test(i); };
    if (!CountHeld(t, value, earlier, &held->released)) {
      for (uint32_t i = 0; i < t.rec.count; ++i) held->unreadable_released += earlier(i) ? 1 : 0;
    }
    return absl::OkStatus();
  }
  // Only those bits (settled_bits_merge.h): rewriting the whole bitmap made a record's
  // settles write count / 8 bytes each.
  if (added.set() > 0) wb->Merge(db.meta, keys::SettledIn(t.key), SettledBitsOperand(added));
  CountHeld(
      t, value, [&](uint32_t i) { return added.Test(i); }, &held->added);
  return absl::OkStatus();
}

}  // namespace

absl::Status SettleInLog(const OpenDb& db, const std::vector<uint64_t>& seqs,
                         rocksdb::WriteBatch* wb, HeldChange* held) {
  if (seqs.empty()) return absl::OkStatus();
  const std::string lo = keys::Seq(seqs.front());
  const rocksdb::Slice lo_s(lo);
  rocksdb::ReadOptions ro = db.IteratorOptions(db.log);
  ro.iterate_lower_bound = &lo_s;
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.log));
  std::optional<Touched> batch;  // the batch record whose bits are being set
  std::optional<LogKey> at;      // the record under the iterator
  // The pending batch record's writes are added while the iterator is still on it, so
  // that its bytes (the held sizes) are read once, with the seek that found it.
  auto flush = [&]() -> absl::Status {
    if (!batch) return absl::OkStatus();
    const std::string_view value(it->value().data(), it->value().size());
    absl::Status s = Write(db, *batch, value, wb, held);
    batch.reset();
    return s;
  };
  for (uint64_t seq : seqs) {
    if (!at || seq >= at->first_seq + at->count) {
      RETURN_IF_ERROR(flush());
      it->Seek(keys::Seq(seq));
      RETURN_IF_ERROR(FromRocks(it->status(), "find WAL entry " + std::to_string(seq)));
      at.reset();
      if (it->Valid()) {
        const std::string_view key(it->key().data(), it->key().size());
        // A key of no known shape is one message, as LogCursor reads it.
        at = ParseLogKey(key).value_or(LogKey{keys::ParseSeq(key), 1, false});
      }
    }
    if (!at || seq < at->first_seq) continue;  // no record holds it
    if (!at->batch) {
      wb->Delete(db.log, it->key());
      continue;
    }
    if (!batch) {  // a batch record is pending only while the iterator is on it (flush)
      batch.emplace();
      batch->key.assign(it->key().data(), it->key().size());
      batch->rec = *at;
      batch->now = SettledBits(at->count);
    }
    batch->now.Set(static_cast<uint32_t>(seq - at->first_seq));
  }
  return flush();
}

}  // namespace kspool::wal
