// WatermarkStore: the settled watermarks (FORMAT.md, "Settled watermarks";
// settled_watermarks.h): per (topic, partition) the highest Kafka offset of a delivered
// outcome settled. A component of RocksWal, which puts the raised ones into each
// Settle()'s batch with it and implements SettledWatermarks with Read().
//
// Keeps the durable maxima of the tracked topics in memory (loaded at Open and Reopen,
// raised only once a settle's batch is written), so that a settle reads nothing to
// compute them. A forgotten topic's watermarks stay on disk, where a restart's
// reconciliation reads them, but leave memory (memory does not grow with every name ever
// sent); the first settle of a topic memory does not hold reads its stored ones first,
// so a watermark never decreases.
// Thread safety: none of its own; RocksWal holds it under settle_mu_, which serializes
// every writer (Settle, ForgetIdleTopics) and the loads. Read() is static: it reads the
// database only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rocksdb/write_batch.h"
#include "wal/open_db.h"
#include "wal/outcome.h"
#include "wal/settled_watermarks.h"

namespace kspool::wal {

class WatermarkStore {
 public:
  // The watermarks a settle raises, to Apply() once its batch is written.
  using Raised = std::vector<Watermark>;

  // At Open and Reopen: what `meta` holds (ReadMeta) for the `tracked` topics; replaces
  // what memory had, which after a failed write may not be durable.
  void Load(const std::vector<Watermark>& durable, const std::vector<std::string>& tracked);
  // Puts into `wb` the new watermark of every (topic, partition) that the delivered
  // outcomes among `outcomes` (live ones only: the caller's filter) raise, one key per
  // partition whatever the number of messages. A topic memory does not hold is read from
  // `db` first; if that read fails, its watermarks are left as they are this time (older
  // than what was seen, which the contract allows; never lower).
  Raised Plan(const std::vector<Outcome>& outcomes, const OpenDb& db, rocksdb::WriteBatch* wb);
  void Apply(const Raised& raised);
  // A forgotten topic (ForgetIdleTopics) leaves memory; its stored watermarks stay.
  void Forget(const std::vector<std::string>& topics);
  // Topics whose watermarks memory holds (for tests of the bound).
  size_t resident_topics() const { return marks_.size(); }

  // The stored watermarks whose key starts with `keys::WatermarkTopicPrefix(*topic)`, or
  // every one when `topic` is null; DATA_LOSS for a key or value that does not parse.
  static absl::StatusOr<std::vector<Watermark>> Read(const OpenDb& db, const std::string* topic);
  // A `watermark/` key and value of `meta` as a Watermark; false if they do not parse.
  static bool Parse(std::string_view key, std::string_view value, Watermark* out);

 private:
  // Whether memory holds `topic`'s durable maxima, reading them from `db` if not.
  bool Resident(const std::string& topic, const OpenDb& db);

  // Per topic held (an empty map: one known to have none), per partition the maximum.
  std::map<std::string, std::map<int32_t, int64_t>, std::less<>> marks_;
};

}  // namespace kspool::wal
