// RocksWal: reading the dead letters (ScanDeadLetters), their totals, and their own
// limits (Options::max_dead_letter_bytes and max_dead_letter_age_ms). Settle() writes
// them (rocks_wal_settle.cc); kspoolctl replays and purges them
// (rocks_wal_dead_admin.cc); their codec is dead_letter.h.
//
// Dead letters count against the WAL's capacity, so without a limit of their own a
// stream of permanent errors would end up refusing every Send. TrimDeadLetters removes
// the oldest (lowest sequence number) first: while the bytes are over the limit, then
// while the oldest was discarded longer ago than the age limit. The age check stops at
// the first younger one, so a dead letter can outlive the age limit while an older-
// numbered one discarded later shields it; the byte limit always holds.
//
// A removed dead letter was counted as discarded when it was discarded, and stays so:
// the ledger accepted = delivered + discarded + pending is unchanged. It is counted a
// second time, per topic and limit, in `dead_dropped/<topic>/<limit>`, in the same
// batch that removes it.
#include "wal/dead_letter.h"
#include "wal/keys.h"
#include "wal/oldest_prefix.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

// One call removes at most this much, so that Settle, which waits for it, is never held
// up long; DeadLetterTrim::more says when to call again.
constexpr size_t kMaxTrimEntries = 20000;
constexpr uint64_t kMaxTrimBytes = 32ull << 20;

constexpr char kBySize[] = "size";
constexpr char kByAge[] = "age";

// The topic a dead letter's record was for; "" when even that cannot be read.
std::string DeadLetterTopic(const absl::StatusOr<DeadLetter>& d) {
  if (!d.ok()) return "";
  absl::StatusOr<Record> rec = DecodeRecord(d->raw);
  return rec.ok() ? rec->topic : SalvageTopic(d->raw);
}

}  // namespace

absl::StatusOr<Counts> CountDeadLetters(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* dead) {
  Counts c;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), dead));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    c.count += 1;
    c.bytes += it->value().size();
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "count dead letters"));
  return c;
}

absl::StatusOr<DeadLetterTrim> RocksWal::TrimDeadLetters() {
  DeadLetterTrim trim;
  const uint64_t max_bytes = options_.max_dead_letter_bytes;
  const int64_t max_age = options_.max_dead_letter_age_ms;
  if (max_bytes == 0 && max_age <= 0) return trim;
  MutexLock settle(&settle_mu_);  // the only writers of `dead` and dead_ hold it
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  Counts dead;
  {
    MutexLock l(&mu_);
    if (!write_error_.ok()) return write_error_;
    dead = dead_;
  }
  if (dead.count == 0 || (max_age <= 0 && dead.bytes <= max_bytes)) return trim;
  const int64_t now_ms = options_.clock->NowMillis();

  std::map<std::string, std::map<std::string, Counts>> dropped;  // topic -> limit -> counts
  uint64_t removed_bytes = 0;
  auto take = [&](uint64_t seq, std::string_view value) {
    if (removed_bytes >= kMaxTrimBytes) return TakeKey::kBound;
    absl::StatusOr<DeadLetter> d = DecodeDeadLetter(seq, value);
    const char* limit = nullptr;
    if (max_bytes > 0 && dead.bytes > max_bytes) {
      limit = kBySize;
    } else if (max_age > 0 && (!d.ok() || now_ms - d->discard_time_ms >= max_age)) {
      limit = kByAge;  // an unreadable one has no time; it goes as the oldest
    } else {
      return TakeKey::kStop;
    }
    Counts& c = limit == kBySize ? trim.by_size : trim.by_age;
    c.count += 1;
    c.bytes += value.size();
    Counts& t = dropped[DeadLetterTopic(d)][limit];
    t.count += 1;
    t.bytes += value.size();
    dead.count -= std::min<uint64_t>(dead.count, 1);
    dead.bytes -= std::min<uint64_t>(dead.bytes, value.size());
    removed_bytes += value.size();
    return TakeKey::kTake;
  };
  ASSIGN_OR_RETURN(OldestPrefix removed,
                   TakeOldest(db_->db.get(), db_->dead, kMaxTrimEntries, take));
  trim.more = removed.more;
  if (removed.keys == 0) return trim;

  rocksdb::WriteBatch wb;
  // What was removed is a prefix of the store: one range tombstone.
  wb.DeleteRange(db_->dead, removed.first, removed.end);
  wb.Put(db_->meta, keys::kDeadLetters, keys::EncodeCounts(dead));
  {
    MutexLock l(&mu_);
    for (auto& [topic, by_limit] : dropped) {
      for (auto& [limit, c] : by_limit) {
        auto t = topics_.find(topic);
        if (t != topics_.end()) {
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
  MutexLock l(&mu_);
  dead_ = dead;
  for (auto& [topic, by_limit] : dropped) {
    for (auto& [limit, c] : by_limit) topics_[topic].dead_dropped[limit] = c;
  }
  return trim;
}

absl::Status RocksWal::ScanDeadLetters(uint64_t from_seq, size_t max_entries,
                                       std::vector<DeadLetter>* out) {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  std::string lo = keys::Seq(from_seq);
  std::unique_ptr<rocksdb::Iterator> it(db_->db->NewIterator(rocksdb::ReadOptions(), db_->dead));
  for (it->Seek(lo); it->Valid() && out->size() < max_entries; it->Next()) {
    uint64_t seq = keys::ParseSeq(std::string_view(it->key().data(), it->key().size()));
    absl::StatusOr<DeadLetter> d =
        DecodeDeadLetter(seq, std::string_view(it->value().data(), it->value().size()));
    if (!d.ok()) return d.status();
    out->push_back(std::move(d).value());
  }
  return FromRocks(it->status(), "scan dead letters");
}

}  // namespace kspool::wal
