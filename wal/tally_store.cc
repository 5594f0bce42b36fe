// TallyStore (tally_store.h).
#include "wal/tally_store.h"

#include <memory>

#include "wal/keys.h"
#include "wal/rocks_status.h"

namespace kspool::wal {

std::string TallyStore::Encode(const DeliveryTally& t) {
  return keys::U64(t.count) + t.sketch.Serialize();
}

absl::StatusOr<DeliveryTally> TallyStore::Decode(std::string_view value) {
  if (value.size() != 8 + SeqSketch::kSerializedBytes) {
    return absl::DataLossError("a delivery tally is " +
                               std::to_string(8 + SeqSketch::kSerializedBytes) + " bytes, not " +
                               std::to_string(value.size()));
  }
  absl::StatusOr<SeqSketch> sketch = SeqSketch::Parse(value.substr(8));
  if (!sketch.ok()) return sketch.status();
  return DeliveryTally{keys::ParseU64(value), *std::move(sketch)};
}

absl::StatusOr<DeliveryTally> TallyStore::Read(const std::string& topic, int32_t partition,
                                               const OpenDb& db, bool* unparsable) {
  std::string value;
  const std::string key = keys::Tally(topic, partition);
  const rocksdb::Status s = db.db->Get(rocksdb::ReadOptions(), db.meta, key, &value);
  if (s.IsNotFound()) return DeliveryTally{};
  RETURN_IF_ERROR(FromRocks(s, "read the WAL's delivery tally " + key));
  absl::StatusOr<DeliveryTally> t = Decode(value);
  if (!t.ok()) {
    if (unparsable) *unparsable = true;
    return absl::DataLossError("WAL meta key " + key + ": " + std::string(t.status().message()));
  }
  return t;
}

absl::StatusOr<TallyStore::Planned> TallyStore::Plan(const std::vector<Outcome>& outcomes,
                                                     const OpenDb& db, rocksdb::WriteBatch* wb,
                                                     uint64_t* restarted) {
  std::map<std::pair<std::string, int32_t>, DeliveryTally> changed;
  DeliveryTally* last = nullptr;
  const Outcome* last_o = nullptr;
  for (const Outcome& o : outcomes) {
    if (!o.delivered() || o.partition < 0) continue;
    // A batch holds thousands of messages but few partitions, usually in runs.
    if (!last_o || o.partition != last_o->partition || o.topic != last_o->topic) {
      std::pair<std::string, int32_t> tp{o.topic, o.partition};
      auto it = changed.find(tp);
      if (it == changed.end()) {
        auto r = resident_.find(tp);
        DeliveryTally start;
        if (r != resident_.end()) {
          start = r->second;
        } else {
          bool unparsable = false;
          absl::StatusOr<DeliveryTally> stored = Read(o.topic, o.partition, db, &unparsable);
          if (unparsable) {
            *restarted += 1;  // its bytes do not parse: from 0 (header comment)
          } else if (!stored.ok()) {
            return stored.status();  // a read error: the settle fails and is retried
          } else {
            start = *std::move(stored);
          }
        }
        it = changed.emplace(std::move(tp), std::move(start)).first;
      }
      last = &it->second;
      last_o = &o;
    }
    last->count += 1;
    last->sketch.Add(o.seq);
  }
  Planned planned;
  planned.reserve(changed.size());
  for (auto& [tp, t] : changed) {
    wb->Put(db.meta, keys::Tally(tp.first, tp.second), Encode(t));
    planned.emplace_back(tp, std::move(t));
  }
  return planned;
}

void TallyStore::Apply(Planned&& planned) {
  for (auto& [tp, t] : planned) resident_[tp] = std::move(t);
}

absl::Status TallyStore::PlanForget(const std::vector<std::string>& topics, const OpenDb& db,
                                    rocksdb::WriteBatch* wb) {
  for (const std::string& topic : topics) {
    // Topic names cannot contain '/': the prefix holds this topic's keys only.
    const std::string prefix = std::string(keys::kTallyPrefix) + topic + "/";
    std::string end = prefix;
    end.back() = static_cast<char>(end.back() + 1);
    const rocksdb::Slice end_s(end);
    rocksdb::ReadOptions ro = db.IteratorOptions(db.meta);
    ro.iterate_upper_bound = &end_s;
    std::unique_ptr<rocksdb::Iterator> it(db.db->NewIterator(ro, db.meta));
    for (it->Seek(prefix); it->Valid(); it->Next()) wb->Delete(db.meta, it->key());
    RETURN_IF_ERROR(FromRocks(it->status(), "list the delivery tallies of topic " + topic));
  }
  return absl::OkStatus();
}

void TallyStore::Forget(const std::vector<std::string>& topics) {
  for (const std::string& topic : topics) {
    auto it = resident_.lower_bound({topic, INT32_MIN});
    while (it != resident_.end() && it->first.first == topic) it = resident_.erase(it);
  }
}

}  // namespace kspool::wal
