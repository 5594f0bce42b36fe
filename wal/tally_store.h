// TallyStore: per Kafka (topic, partition), the distinct sequence numbers delivered there,
// counted and summarized in a SeqSketch (FORMAT.md, "Delivery tallies"): what a heartbeat
// vouches for downstream (docs/AUDIT.md). A component of RocksWal, which puts the new
// tallies into each Settle()'s synced batch with the outcomes they count, one key per
// partition touched: no fsync and no write per message.
//
// Guarantees: a tally counts each live entry's delivery once (Settle's filter: a settle
// applied twice adds nothing) and never decreases while its topic is tracked. A
// forgotten topic's tallies leave the disk with it (PlanForget: 2.3 KB per partition
// must not grow with every topic name ever sent); if it returns they start from 0, which
// an auditor takes as a new start. Memory holds
// the tallies read or written since the last Open/Reopen (Clear): a partition memory
// does not hold is read from `meta` first, and a read that fails fails the plan, so the
// settle fails and is retried rather than counting from 0.
// Thread safety: none of its own; RocksWal holds it under settle_mu_.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/seq_sketch.h"
#include "rocksdb/write_batch.h"
#include "wal/open_db.h"
#include "wal/outcome.h"

namespace kspool::wal {

struct DeliveryTally {
  uint64_t count = 0;  // distinct sequence numbers delivered to the partition
  SeqSketch sketch;    // of those numbers
};

class TallyStore {
 public:
  // The tallies a settle writes, to Apply() once its batch is durable.
  using Planned = std::vector<std::pair<std::pair<std::string, int32_t>, DeliveryTally>>;

  // Forgets what memory holds: after a failed write it may not be durable.
  void Clear() { resident_.clear(); }
  // Puts into `wb` the new tally of each partition the delivered outcomes among
  // `outcomes` (live ones only: the caller's filter) were delivered to. A stored tally
  // whose bytes do not parse starts again from 0 (counted in *restarted): refusing it
  // would stop every settle, every topic's, for one damaged key; an auditor sees the
  // count fall and starts its audit of that partition again at the next heartbeat.
  absl::StatusOr<Planned> Plan(const std::vector<Outcome>& outcomes, const OpenDb& db,
                               rocksdb::WriteBatch* wb, uint64_t* restarted);
  void Apply(Planned&& planned);
  // Puts into `wb` the deletion of the forgotten `topics`' stored tallies; an error if
  // they cannot be listed (then they stay, to be deleted at a later forgetting).
  static absl::Status PlanForget(const std::vector<std::string>& topics, const OpenDb& db,
                                 rocksdb::WriteBatch* wb);
  // Once PlanForget's batch is written: they leave memory too.
  void Forget(const std::vector<std::string>& topics);

  // What `meta` holds for one partition (zero if nothing), read without memory;
  // `*unparsable` (when given) tells a value that does not parse from a failed read.
  static absl::StatusOr<DeliveryTally> Read(const std::string& topic, int32_t partition,
                                            const OpenDb& db, bool* unparsable = nullptr);
  static std::string Encode(const DeliveryTally& t);
  static absl::StatusOr<DeliveryTally> Decode(std::string_view value);

 private:
  std::map<std::pair<std::string, int32_t>, DeliveryTally> resident_;
};

}  // namespace kspool::wal
