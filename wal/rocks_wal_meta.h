// What opening a WAL reads from column family `meta` (FORMAT.md), before it touches the
// in-memory state (rocks_wal_meta.cc). Internal to wal/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "wal/settled_watermarks.h"
#include "wal/stats.h"

namespace kspool::wal {

struct MetaState {
  uint64_t next_seq = 1;
  uint64_t head = 0;  // persisted head_seq; 0: none
  int64_t last_receive = 0;
  CommitPoints points;  // durable: per scope the higher of the written and leased point
  int64_t report_point = 0;
  int64_t ceiling = 0;  // commit_ceiling_ms; 0: none (a clean close)
  int64_t receive_floor = 0;
  std::optional<Counts> dead;  // absent in WALs written before the totals were kept
  // Absent in WALs written before the delivery index existed.
  std::optional<uint64_t> delivery_floor;
  Counts delivery_index;
  std::map<std::string, TopicStats> topics;
  std::map<std::string, int64_t> last_append;  // by topic, where recorded
  std::vector<std::pair<std::string, std::string>> split;  // `split/` keys and values
  // `watermark/` keys (none in WALs written before them); one that does not parse is
  // left out (a watermark only ever lowers where a reader starts).
  std::vector<Watermark> watermarks;
};

absl::StatusOr<MetaState> ReadMeta(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                                   const rocksdb::ReadOptions& scan);

}  // namespace kspool::wal
