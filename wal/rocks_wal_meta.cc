// RocksWal: what opening reads from column family `meta` (FORMAT.md), in one pass and
// without touching the in-memory state; LoadState (rocks_wal_open.cc) takes it over.
#include "wal/keys.h"
#include "wal/rocks_wal.h"
#include "wal/rocks_wal_meta.h"
#include "wal/rocks_status.h"
#include "wal/watermark_store.h"

namespace kspool::wal {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

absl::StatusOr<MetaState> ReadMeta(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                                   const rocksdb::ReadOptions& scan) {
  auto get = [&](std::string_view key, std::string* v) -> absl::StatusOr<bool> {
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, key, v);
    if (s.IsNotFound()) return false;
    RETURN_IF_ERROR(FromRocks(s, "read WAL meta " + std::string(key)));
    return true;
  };
  auto i64 = [](const std::string& v) { return static_cast<int64_t>(keys::ParseU64(v)); };
  MetaState m;
  std::string v;
  ASSIGN_OR_RETURN(bool has_next, get(keys::kNextSeq, &v));
  if (has_next) m.next_seq = std::max<uint64_t>(1, keys::ParseU64(v));
  ASSIGN_OR_RETURN(bool has_head, get(keys::kHead, &v));
  if (has_head) m.head = keys::ParseU64(v);
  ASSIGN_OR_RETURN(bool has_last, get(keys::kLastReceive, &v));
  if (has_last) m.last_receive = i64(v);
  // Durable points: per scope the higher of the written and the leased one.
  ASSIGN_OR_RETURN(bool has_cp, get(keys::kCommitPoint, &v));
  if (has_cp) m.points.global_ms = i64(v);
  // The report's point; in WALs written before it was kept apart, the written point.
  m.report_point = m.points.global_ms;
  ASSIGN_OR_RETURN(bool has_report_point, get(keys::kReportPoint, &v));
  if (has_report_point) m.report_point = i64(v);
  ASSIGN_OR_RETURN(bool has_leased, get(keys::kLeasedPoint, &v));
  if (has_leased) m.points.global_ms = std::max(m.points.global_ms, i64(v));
  ASSIGN_OR_RETURN(bool has_ceiling, get(keys::kCommitCeiling, &v));
  if (has_ceiling) m.ceiling = i64(v);
  ASSIGN_OR_RETURN(bool has_floor, get(keys::kReceiveFloor, &v));
  if (has_floor) m.receive_floor = i64(v);
  ASSIGN_OR_RETURN(bool has_dead, get(keys::kDeadLetters, &v));
  if (has_dead) m.dead = keys::ParseCounts(v);
  ASSIGN_OR_RETURN(bool has_delivery_floor, get(keys::kDeliveryFloor, &v));
  if (has_delivery_floor) m.delivery_floor = keys::ParseU64(v);
  ASSIGN_OR_RETURN(bool has_delivery_index, get(keys::kDeliveryIndex, &v));
  if (has_delivery_index) m.delivery_index = keys::ParseCounts(v);

  // "topic/reason" (topic names cannot contain '/').
  auto split2 = [](std::string_view rest, std::string* a, std::string* b) {
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return false;
    *a = std::string(rest.substr(0, slash));
    *b = std::string(rest.substr(slash + 1));
    return true;
  };
  // Past the bitmaps of part-settled records: the first key after every `settled_in/` one.
  std::string after_bitmaps(keys::kSettledInPrefix);
  after_bitmaps.back() = static_cast<char>(after_bitmaps.back() + 1);
  // Past the delivery tallies (2.3 KB per partition ever delivered to): read by the
  // settle that adds to one (TallyStore), never here.
  std::string after_tallies(keys::kTallyPrefix);
  after_tallies.back() = static_cast<char>(after_tallies.back() + 1);
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(scan, meta));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    if (StartsWith(k, keys::kSettledInPrefix)) {
      // The bitmaps are read with their records (LogCursor), never here: one seek passes
      // them and their tombstones, so that opening does not grow with a backlog of
      // part-settled records (one stuck partition of a keyed topic makes one per record).
      it->Seek(after_bitmaps);
      if (!it->Valid()) break;
      k = std::string_view(it->key().data(), it->key().size());
    }
    if (StartsWith(k, keys::kTallyPrefix)) {
      it->Seek(after_tallies);
      if (!it->Valid()) break;
      k = std::string_view(it->key().data(), it->key().size());
    }
    std::string_view val(it->value().data(), it->value().size());
    std::string topic, name;
    if (StartsWith(k, "split/")) {
      m.split.emplace_back(k, val);
    } else if (StartsWith(k, keys::kWatermarkPrefix)) {
      Watermark w;
      if (WatermarkStore::Parse(k, val, &w)) m.watermarks.push_back(std::move(w));
    } else if (StartsWith(k, keys::kCommitPointTopicPrefix) ||
               StartsWith(k, keys::kLeasedPointTopicPrefix)) {
      const size_t prefix = StartsWith(k, keys::kCommitPointTopicPrefix)
                                ? keys::kCommitPointTopicPrefix.size()
                                : keys::kLeasedPointTopicPrefix.size();
      int64_t& ms = m.points.topics_ms[std::string(k.substr(prefix))];
      ms = std::max(ms, static_cast<int64_t>(keys::ParseU64(val)));
    } else if (StartsWith(k, keys::kAcceptedPrefix)) {
      topic = std::string(k.substr(keys::kAcceptedPrefix.size()));
      m.topics[topic].accepted = keys::ParseCounts(val);
      if (auto last = keys::ParseAcceptedLast(val)) m.last_append[topic] = *last;
    } else if (StartsWith(k, keys::kDeliveredPrefix)) {
      m.topics[std::string(k.substr(keys::kDeliveredPrefix.size()))].delivered =
          keys::ParseCounts(val);
    } else if (StartsWith(k, keys::kHeldPrefix)) {
      m.topics[std::string(k.substr(keys::kHeldPrefix.size()))].held = keys::ParseCounts(val);
    } else if (StartsWith(k, keys::kDiscardedPrefix)) {
      if (split2(k.substr(keys::kDiscardedPrefix.size()), &topic, &name)) {
        m.topics[topic].discarded[name] = keys::ParseCounts(val);
      }
    } else if (StartsWith(k, keys::kDeadDroppedPrefix)) {
      if (split2(k.substr(keys::kDeadDroppedPrefix.size()), &topic, &name)) {
        m.topics[topic].dead_dropped[name] = keys::ParseCounts(val);
      }
    }
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "read WAL meta"));
  return m;
}

}  // namespace kspool::wal
