// wal::Wal: the durable log. Owns one RocksDB directory. Knows nothing of gRPC or Kafka.
//
// Wal is the aggregate of the narrow interfaces its callers see, one per kind of caller;
// each header states its part of the contract:
//   log_status.h          LogStatus: health, identity, counters, commit points, topics
//                         (inherited by the interfaces below; read from memory)
//   append_log.h          AppendLog: appends with group commit (writers)
//   drain_log.h           DrainLog: choosing scans, Settle, Reopen (the drain)
//   commit_point_store.h  CommitPointStore: receive-time bound, saved commit points
//   delivery_queries.h    DeliveryQueries: what became of a sequence number
//   maintenance.h         Maintenance: trims, forgetting idle topics, compaction
//   inspection.h          Inspection: report, scans, newest entry, recount (read-only)
//   dead_letter_admin.h   DeadLetterAdmin: replay and purge dead letters (kspoolctl)
//   settled_watermarks.h  SettledWatermarks: per partition, the highest offset settled
// The owner (the agent's wiring, kspoolctl, tests) holds the Wal from Open() and hands
// each component a pointer to the narrowest interface it needs.
//
// Contract across the interfaces:
//  * After a failed write or sync, every later append, Settle() and SaveCommitPoints()
//    fails with UNAVAILABLE until Reopen() succeeds.
//  * Sequence numbers are unique, strictly increasing and never reused, also across
//    reopen; receive times never go backwards; saved commit points never decrease.
//  * accepted = delivered + discarded + live holds per topic at every durable state.
// Thread safety: every method may be called from any thread. Ownership: the caller of
// Open() owns the Wal; destroying it commits what is queued and closes the directory.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "wal/append_log.h"
#include "wal/commit_point_store.h"
#include "wal/dead_letter_admin.h"
#include "wal/delivery_queries.h"
#include "wal/drain_log.h"
#include "wal/entry.h"
#include "wal/inspection.h"
#include "wal/log_status.h"
#include "wal/maintenance.h"
#include "wal/options.h"
#include "wal/outcome.h"
#include "wal/report.h"
#include "wal/settled_watermarks.h"
#include "wal/stats.h"

namespace kspool::wal {

class Wal : public AppendLog,
            public DrainLog,
            public CommitPointStore,
            public DeliveryQueries,
            public Maintenance,
            public Inspection,
            public DeadLetterAdmin,
            public SettledWatermarks {
 public:
  ~Wal() override = default;

  // Opens (creating if needed) and recovers the WAL in options.dir. Refuses a WAL of
  // a newer format version with FAILED_PRECONDITION. Does not scan the log.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Wal>> Open(Options options);
};

}  // namespace kspool::wal
