// LogCursor: walking the live messages of the log across version-1 entries and batch
// records (log_cursor.h).
#include "wal/log_cursor.h"

#include <algorithm>

#include "wal/keys.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

namespace {

// A version-1 entry: decoded, or with its status and its stored bytes.
Entry DecodeEntry(uint64_t seq, std::string_view raw) {
  Entry e;
  e.seq = seq;
  e.size = raw.size();
  absl::StatusOr<Record> rec = DecodeRecord(raw);
  if (rec.ok()) {
    e.record = std::move(rec).value();
  } else {
    e.status = rec.status();
    e.raw.assign(raw);
  }
  return e;
}

}  // namespace

LogCursor::LogCursor(const OpenDb& db, const Range& range) : db_(db), range_(range) {
  if (!range.snapshot) own_snapshot_ = std::make_unique<rocksdb::ManagedSnapshot>(db.db.get());
  snapshot_ = range.snapshot ? range.snapshot : own_snapshot_->snapshot();
  rocksdb::ReadOptions ro = db.IteratorOptions(db.log);
  ro.snapshot = snapshot_;
  ro.fill_cache = range.fill_cache;
  // A record is keyed by its last number, so the keys from the lower bound's on hold every
  // message at or above it; one holding a number below `upper` ends before
  // upper + kMaxBatchMessages.
  lo_key_ = keys::Seq(range.lower);
  lo_ = rocksdb::Slice(lo_key_);
  ro.iterate_lower_bound = &lo_;
  if (range.upper <= UINT64_MAX - kMaxBatchMessages) {
    hi_key_ = keys::Seq(range.upper + kMaxBatchMessages);
    hi_ = rocksdb::Slice(hi_key_);
    ro.iterate_upper_bound = &hi_;
  }
  it_.reset(db.db->NewIterator(ro, db.log));
}

absl::Status LogCursor::status(std::string_view what) const {
  if (!status_.ok()) return status_;
  return FromRocks(it_->status(), std::string(what));
}

bool LogCursor::Load() {
  if (!it_->Valid()) return false;
  const std::string_view key(it_->key().data(), it_->key().size());
  const std::optional<LogKey> k = ParseLogKey(key);
  key_malformed_ = !k;
  rec_ = k ? *k : LogKey{keys::ParseSeq(key), 1, false};
  value_ = std::string_view(it_->value().data(), it_->value().size());
  batch_.reset();
  salvage_.reset();
  bits_.Clear();
  if (!rec_.batch) return true;
  batch_.emplace(ParseBatch(value_, rec_.count));
  if (batch_->status().code() == absl::StatusCode::kDataLoss) {
    if (absl::StatusOr<BatchView> layout = ParseBatchLayout(value_, rec_.count); layout.ok()) {
      salvage_ = std::move(layout).value();
    }
  }
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot_;
  std::string stored;
  const rocksdb::Status s = db_.db->Get(ro, db_.meta, keys::SettledIn(key), &stored);
  if (s.IsNotFound()) return true;
  if (!s.ok()) {
    status_ =
        FromRocks(s, "read which messages of WAL record " + std::to_string(rec_.first_seq) + ".." +
                         std::to_string(rec_.first_seq + rec_.count - 1) + " are settled");
    return false;
  }
  // A bitmap of another length was not written by this build: every message stays live
  // (delivered again rather than lost).
  SettledBits::Parse(stored, rec_.count, &bits_);
  return true;
}

void LogCursor::Forward(uint64_t from, bool loaded) {
  from = std::max(from, range_.lower);
  valid_ = false;
  if (!loaded && !Load()) return;
  while (rec_.first_seq < range_.upper) {
    for (uint64_t i = from > rec_.first_seq ? from - rec_.first_seq : 0; i < rec_.count; ++i) {
      if (rec_.first_seq + i >= range_.upper) return;
      if (Settled(static_cast<uint32_t>(i))) continue;
      idx_ = static_cast<uint32_t>(i);
      valid_ = true;
      return;
    }
    it_->Next();
    if (!Load()) return;
  }
}

void LogCursor::Seek(uint64_t seq) {
  it_->Seek(keys::Seq(std::max(seq, range_.lower)));
  Forward(seq, /*loaded=*/false);
}

void LogCursor::Next() {
  if (!valid_) return;
  if (idx_ + 1 < rec_.count) {
    Forward(rec_.first_seq + idx_ + 1, /*loaded=*/true);
    return;
  }
  const uint64_t after = rec_.first_seq + rec_.count;
  it_->Next();
  Forward(after, /*loaded=*/false);
}

void LogCursor::SeekToLast() {
  valid_ = false;
  for (it_->SeekToLast(); Load(); it_->Prev()) {
    for (uint64_t i = rec_.count; i-- > 0;) {
      const uint64_t seq = rec_.first_seq + i;
      if (seq >= range_.upper) continue;
      if (seq < range_.lower) return;
      if (Settled(static_cast<uint32_t>(i))) continue;
      idx_ = static_cast<uint32_t>(i);
      valid_ = true;
      return;
    }
  }
}

std::string_view LogCursor::CorruptShare() const {
  const size_t share = value_.size() / rec_.count, extra = value_.size() % rec_.count;
  const size_t at = idx_ * share + std::min<size_t>(idx_, extra);
  return value_.substr(at, share + (idx_ < extra ? 1 : 0));
}

size_t LogCursor::size() const {
  if (!batch_) return value_.size();
  if (batch_->ok()) return (*batch_)->MessageSize(idx_);
  return salvage_ ? salvage_->MessageSize(idx_) : CorruptShare().size();
}

absl::StatusOr<int64_t> LogCursor::ReceiveTime() const {
  if (!batch_) return PeekReceiveTime(value_);
  if (batch_->ok()) return (*batch_)->receive_time_ms;
  // As for a version-1 record, whose receive time is read without its checksum.
  if (salvage_) return salvage_->receive_time_ms;
  return batch_->status();
}

absl::StatusOr<int64_t> LogCursor::VerifiedReceiveTime() const {
  if (batch_) {
    if (batch_->ok()) return (*batch_)->receive_time_ms;
    return batch_->status();  // a salvaged time is unchecked
  }
  Entry e = Decode();
  if (!e.status.ok()) return e.status;
  return e.record.receive_time_ms;
}

RecordRouting LogCursor::Routing() const {
  if (!batch_) return PeekRouting(value_);
  if (batch_->ok()) return (*batch_)->Routing(idx_);
  // What PeekRouting() reads from the raw bytes Decode() gives, so a reader that counts
  // an unreadable message under its topic before decoding it agrees with one after.
  if (!salvage_) return PeekRouting(CorruptShare());
  unreadable_ = UnreadableAsVersion1(*salvage_, idx_, value_);
  return PeekRouting(unreadable_);
}

Entry LogCursor::Decode() const {
  if (!batch_) {
    Entry e = DecodeEntry(seq(), value_);
    if (key_malformed_ && e.status.ok()) {
      e.status = absl::DataLossError("malformed WAL log key at " + std::to_string(seq()));
      e.raw.assign(value_);
      e.record = Record();
    }
    return e;
  }
  Entry e;
  e.seq = seq();
  absl::StatusOr<Record> r =
      batch_->ok() ? (*batch_)->Decode(idx_) : absl::StatusOr<Record>(batch_->status());
  if (r.ok()) {
    e.size = (*batch_)->MessageSize(idx_);
    e.record = std::move(r).value();
  } else {
    e.status = r.status();
    if (batch_->ok()) {
      e.raw = UnreadableAsVersion1(**batch_, idx_, value_);
    } else if (salvage_) {
      e.raw = UnreadableAsVersion1(*salvage_, idx_, value_);
    } else {
      e.raw.assign(CorruptShare());
    }
    e.size = e.raw.size();
  }
  return e;
}

}  // namespace kspool::wal
