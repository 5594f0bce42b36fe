// WatermarkStore: the settled watermarks (FORMAT.md, "Settled watermarks";
// settled_watermarks.h): per (topic, partition) the highest Kafka offset of a delivered
// outcome settled. A component of RocksWal, which puts the raised ones into each
// Settle()'s batch with it and implements SettledWatermarks with Read().
//
// Keeps the durable maxima in memory (loaded at Open and Reopen, raised only once a
// settle's batch is written), so that a settle reads nothing to compute them.
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

  // At Open and Reopen: what `meta` holds (ReadMeta); replaces what memory had, which
  // after a failed write may not be durable.
  void Load(const std::vector<Watermark>& durable);
  // Puts into `wb` the new watermark of every (topic, partition) that the delivered
  // outcomes among `outcomes` (live ones only: the caller's filter) raise, one key per
  // partition whatever the number of messages.
  Raised Plan(const std::vector<Outcome>& outcomes, const OpenDb& db,
              rocksdb::WriteBatch* wb) const;
  void Apply(const Raised& raised);
  // Puts the deletion of every watermark of `topics` into `wb`; Forget() them once it is
  // written.
  void PlanForget(const std::vector<std::string>& topics, const OpenDb& db,
                  rocksdb::WriteBatch* wb) const;
  void Forget(const std::vector<std::string>& topics);

  // The stored watermarks whose key starts with `keys::WatermarkTopicPrefix(*topic)`, or
  // every one when `topic` is null; DATA_LOSS for a key or value that does not parse.
  static absl::StatusOr<std::vector<Watermark>> Read(const OpenDb& db, const std::string* topic);
  // A `watermark/` key and value of `meta` as a Watermark; false if they do not parse.
  static bool Parse(std::string_view key, std::string_view value, Watermark* out);

 private:
  std::map<std::string, std::map<int32_t, int64_t>, std::less<>> marks_;
};

}  // namespace kspool::wal
