// WatermarkStore (watermark_store.h): the settled watermarks' writes and reads.
#include "wal/watermark_store.h"

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

#include "wal/keys.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

void WatermarkStore::Load(const std::vector<Watermark>& durable,
                          const std::vector<std::string>& tracked) {
  marks_.clear();
  for (const std::string& topic : tracked) marks_[topic];
  for (const Watermark& w : durable) {
    auto t = marks_.find(w.topic);
    if (t == marks_.end()) continue;  // not tracked: read at its first settle, if any
    int64_t& m = t->second.try_emplace(w.partition, w.offset).first->second;
    m = std::max(m, w.offset);
  }
}

bool WatermarkStore::Resident(const std::string& topic, const OpenDb& db) {
  if (marks_.count(topic)) return true;
  absl::StatusOr<std::vector<Watermark>> stored = Read(db, &topic);
  if (!stored.ok()) return false;
  std::map<int32_t, int64_t>& held = marks_[topic];
  for (const Watermark& w : *stored) {  // only this topic's: its prefix ends with '/'
    int64_t& m = held.try_emplace(w.partition, w.offset).first->second;
    m = std::max(m, w.offset);
  }
  return true;
}

WatermarkStore::Raised WatermarkStore::Plan(const std::vector<Outcome>& outcomes,
                                            const OpenDb& db, rocksdb::WriteBatch* wb) {
  // The batch's maxima first: a batch holds thousands of messages but a few partitions,
  // usually in runs, so a message costs a comparison with the one before it.
  Raised batch;
  std::map<std::pair<std::string_view, int32_t>, size_t> where;
  const Outcome* last = nullptr;
  size_t at = 0;
  for (const Outcome& o : outcomes) {
    if (!o.delivered() || !o.raises_watermark || o.partition < 0 || o.offset < 0) continue;
    if (!last || o.partition != last->partition || o.topic != last->topic) {
      auto [it, fresh] = where.try_emplace({o.topic, o.partition}, batch.size());
      if (fresh) batch.push_back({o.topic, o.partition, o.offset});
      at = it->second;
      last = &o;
    }
    batch[at].offset = std::max(batch[at].offset, o.offset);
  }
  Raised raised;
  for (Watermark& w : batch) {
    // Unknown stored maxima could be higher: writing ours could lower one. Left as is.
    if (!Resident(w.topic, db)) continue;
    const std::map<int32_t, int64_t>& held = marks_.find(w.topic)->second;
    auto p = held.find(w.partition);
    if (p != held.end() && p->second >= w.offset) continue;
    wb->Put(db.meta, keys::Watermark(w.topic, w.partition),
            keys::U64(static_cast<uint64_t>(w.offset)));
    raised.push_back(std::move(w));
  }
  return raised;
}

void WatermarkStore::Apply(const Raised& raised) {
  for (const Watermark& w : raised) {
    int64_t& m = marks_[w.topic].try_emplace(w.partition, w.offset).first->second;
    m = std::max(m, w.offset);
  }
}

void WatermarkStore::Forget(const std::vector<std::string>& topics) {
  for (const std::string& topic : topics) marks_.erase(topic);
}

bool WatermarkStore::Parse(std::string_view key, std::string_view value, Watermark* out) {
  if (value.size() < 8) return false;  // later fields may follow the offset
  const auto offset = static_cast<int64_t>(keys::ParseU64(value));
  if (offset < 0 || !keys::ParseWatermark(key, &out->topic, &out->partition)) return false;
  out->offset = offset;
  return true;
}

absl::StatusOr<std::vector<Watermark>> WatermarkStore::Read(const OpenDb& db,
                                                            const std::string* topic) {
  const std::string prefix =
      topic ? keys::WatermarkTopicPrefix(*topic) : std::string(keys::kWatermarkPrefix);
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);  // '/' + 1: just past the prefix
  const rocksdb::Slice end_s(end);
  rocksdb::ReadOptions ro = db.IteratorOptions(db.meta);
  ro.iterate_upper_bound = &end_s;
  std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.meta));
  std::vector<Watermark> out;
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    const std::string_view k(it->key().data(), it->key().size());
    Watermark w;
    if (!Parse(k, std::string_view(it->value().data(), it->value().size()), &w)) {
      return absl::DataLossError("WAL meta key " + std::string(k) +
                                 " is not a watermark (FORMAT.md, \"Settled watermarks\")");
    }
    out.push_back(std::move(w));
  }
  RETURN_IF_ERROR(FromRocks(it->status(), "read the WAL's watermarks"));
  // Key order puts a topic "a-b" before "a" ('-' < '/'): sorted by name instead.
  std::sort(out.begin(), out.end(), [](const Watermark& a, const Watermark& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
  return out;
}

}  // namespace kspool::wal
