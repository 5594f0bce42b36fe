// RocksWal::CheckBitmaps (inspection.h): every `settled_in/` bitmap read with its record,
// for `kspoolctl wal verify`. Not on any serving path: it walks every bitmap.
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "wal/keys.h"
#include "wal/record.h"
#include "wal/rocks_status.h"
#include "wal/rocks_wal.h"
#include "wal/settle_in_log.h"
#include "wal/settled_bits.h"

namespace kspool::wal {
namespace {

// The log key a bitmap's key names (keys::SettledIn: its hex digits), or nullopt.
std::optional<std::string> LogKeyOf(std::string_view bitmap_key) {
  const std::string_view hex = bitmap_key.substr(keys::kSettledInPrefix.size());
  if (hex.size() % 2 != 0 || !std::all_of(hex.begin(), hex.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  return absl::HexStringToBytes(absl::string_view(hex.data(), hex.size()));
}

}  // namespace

absl::Status ReadBitmaps(const OpenDb& db, const rocksdb::Snapshot* snap, BitmapCheck* out) {
  rocksdb::ReadOptions ro = db.IteratorOptions(db.meta);
  ro.snapshot = snap;
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.meta));
  const std::string prefix(keys::kSettledInPrefix);
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    const std::string key = it->key().ToString();
    if (key.compare(0, prefix.size(), prefix) != 0) break;
    ++out->bitmaps;
    std::optional<std::string> log_key = LogKeyOf(key);
    std::optional<LogKey> rec = log_key ? ParseLogKey(*log_key) : std::nullopt;
    if (!rec || !rec->batch) {
      out->bad_length.push_back(key + " (names no batch record)");
      continue;
    }
    std::string value;
    const rocksdb::Status s = db.db->Get(ro, db.log, *log_key, &value);
    if (s.IsNotFound()) {
      out->orphans.push_back(key);
      continue;
    }
    if (!s.ok()) return FromRocks(s, "read the record of bitmap " + key);
    SettledBits bits;
    if (!SettledBits::Parse(it->value().ToString(), rec->count, &bits)) {
      out->bad_length.push_back(key + " (" + std::to_string(it->value().size()) +
                                " bytes for a record of " + std::to_string(rec->count) + ")");
      continue;
    }
    if (bits.all()) out->all_set.push_back(key);
    absl::StatusOr<BatchView> view = ParseBatch(value, rec->count);
    if (!view.ok()) {
      out->unreadable.push_back(key + ": " + view.status().ToString());
      continue;
    }
    Counts& c = out->held[std::string(view->topic)];
    for (uint32_t i = 0; i < rec->count; ++i) {
      if (!bits.Test(i)) continue;
      c.count += 1;
      c.bytes += view->MessageSize(i);
    }
  }
  return FromRocks(it->status(), "read the bitmaps of part-settled records");
}

absl::StatusOr<BitmapCheck> RocksWal::CheckBitmaps() {
  ReaderLock r(&db_mu_);
  if (!db_) return ClosedError();
  BitmapCheck out;
  const rocksdb::Snapshot* snap = db_->db->GetSnapshot();
  absl::Status status = ReadBitmaps(*db_, snap, &out);
  db_->db->ReleaseSnapshot(snap);
  if (!status.ok()) return status;
  return out;
}

}  // namespace kspool::wal
