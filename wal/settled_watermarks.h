// wal::SettledWatermarks: per Kafka (topic, partition), the highest offset this agent has
// seen acknowledged for an entry it settled (FORMAT.md, "Settled watermarks"). Meant for
// reading each partition from its watermark at a restart, to find the copies of live
// entries that Kafka already holds.
//
// Contract:
//  * Settle() writes a partition's watermark in the batch that removes the entries it
//    covers (no write, no fsync of its own), only when a delivered outcome of a live
//    entry raises it: it never decreases. Discards, deliveries without a known
//    partition or offset (-1), and those marked !Outcome::raises_watermark (the drain's,
//    while copies from before a restart may lie below them) do not move it.
//  * What is read is what is durable: the highest offset among the delivered outcomes
//    settled for the partition (the delivery index holds the same outcomes while it
//    keeps them), never one of a settle that failed. After a failed sync, a crash or a
//    power cut a watermark may be older than what the agent saw, never newer than what
//    was durably settled.
//  * It is not an end of this agent's copies: a topic deleted and recreated restarts
//    its offsets, so a watermark may lie beyond the partition's current end. A reader
//    uses it only as where to start looking, clamped to the partition's end offset
//    (above the end: it says nothing, read as if there were none).
//  * A WAL written before watermarks existed has none; so does a partition nothing was
//    delivered to yet, and a topic forgotten as idle (Maintenance::ForgetIdleTopics).
// Thread safety: every method may be called from any thread; a read-only WAL serves them.
// Ownership: borrowed from the owner of the wal::Wal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kspool::wal {

struct Watermark {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;  // the highest offset acknowledged, >= 0

  bool operator==(const Watermark& o) const {
    return topic == o.topic && partition == o.partition && offset == o.offset;
  }
};

class SettledWatermarks {
 public:
  virtual ~SettledWatermarks() = default;

  // Every watermark, by topic, then partition. DATA_LOSS names a stored key or value
  // that does not parse; UNAVAILABLE while the WAL is closed after an I/O error.
  [[nodiscard]] virtual absl::StatusOr<std::vector<Watermark>> Watermarks() = 0;
  // The watermarks of `topic`, by partition (one prefix scan; empty if it has none).
  [[nodiscard]] virtual absl::StatusOr<std::vector<Watermark>> WatermarksOf(
      std::string_view topic) = 0;
};

}  // namespace kspool::wal
