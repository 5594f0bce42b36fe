// BruceIngest: from Bruce/Dory-format bytes to the WAL. Each message is decoded
// (BruceCodec), validated like a gRPC Send's message (topic, size, timestamp), given its
// partition (PartitionKey: (uint32)key mod the topic's partition count from the
// PartitionCache; AnyPartition: the drain's partitioner) and encoded into the current
// batch; Flush() hands the batch to the WAL's group commit (wal::AppendLog::AppendAsync, the
// path every Send takes). Refused input goes to BruceRejections.
// Flow control: at most `max_inflight_appends` batches are in the WAL's hands; beyond
// it, and while the WAL refuses appends (full, I/O error; retried after the agent's
// retry-after delay), Flush() blocks, so the listener stops reading its sockets and the
// kernel holds the clients back. A batch whose append failed in doubt (a failed sync:
// RocksDB may have kept it) is not appended again blindly: once the WAL is reopened
// it asks whether the write was kept (wal::AppendLog::AppendKept), and appends it again
// only if not. A PartitionKey message for a topic whose partition
// count was never learned waits the same way until Kafka's metadata names it.
// Thread safety: Accept() and Flush() from one thread (the listener's); Stop() and the
// destructor from another. Owns its batches; borrows the WAL, the cache, the log.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string_view>

#include "agent/bruce/bruce_rejections.h"
#include "agent/stats/metrics.h"
#include "agent/drain/partition_cache.h"
#include "agent/validate/request_validator.h"
#include "wal/append_batch.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "wal/append_log.h"

namespace kspool::agent {

enum class BruceTransport { kDatagram = 0, kStream = 1, kTcp = 2 };
std::string_view BruceTransportName(BruceTransport t);

struct BruceIngestOptions {
  RequestLimits limits;  // --max-message-bytes (key + value), --max-future-timestamp
  size_t max_inflight_appends = 4;
  size_t max_batch_messages = 2048;
  size_t max_batch_bytes = 1 << 20;
  std::function<void()> on_appended;                        // e.g. wake the drain loop
  std::function<int64_t(absl::StatusCode)> retry_after_ms;  // after a refused append
  PartitionCache* partitions = nullptr;                     // required for PartitionKey
  Metrics* metrics = nullptr;                               // optional
  Clock* clock = SystemClock::Default();
};

class BruceIngest {
 public:
  BruceIngest(wal::AppendLog* wal, BruceRejections* rejections, BruceIngestOptions options);
  // Stops, appends the current batch, then waits for the appends in the WAL's hands.
  ~BruceIngest();

  // One message as received (`max_bytes`: the transport's --bruce-max-message-bytes):
  // added to the batch (flushed when full), or refused and recorded.
  void Accept(std::string_view bytes, BruceTransport transport, size_t max_bytes);
  // Appends the current batch (and first any batch the WAL refused); see flow control.
  void Flush();
  // Ends every wait: later Flush() calls append without waiting for room, once.
  void Stop();

  // True when messages wait in the current batch (the listener thread's view).
  bool has_batch() const { return !batch_.batch.empty(); }
  // True when Flush() would not wait: an append slot is free and nothing is refused.
  bool HasRoom() const;
  // True when no append is in the WAL's hands: a batch flushed now starts a group commit
  // at once instead of waiting for one.
  bool WalIdle() const;
  // Called (on the WAL's committer thread) whenever an append finishes, so that a
  // listener waiting for room can flush. Set before the first Accept().
  void set_on_room(std::function<void()> f) { on_room_ = std::move(f); }

  // True while the WAL refuses: a refused batch waits for its retry and no append is in
  // the WAL's hands.
  bool Refused() const;

  // Messages appended durably so far.
  uint64_t appended() const;

 private:
  struct Pending {
    wal::AppendBatch batch;
    std::array<uint64_t, 3> by_transport{};
    // Set when its append failed in doubt (wal::AppendInDoubtSeq): its first sequence
    // number, asked about (AppendKept) before it may be appended again.
    std::optional<uint64_t> in_doubt_seq;
  };
  // The partition of a PartitionKey message, or a bad_topic error; waits (flow control)
  // while the topic's partition count is unknown. -2: stopping.
  absl::StatusOr<int32_t> PartitionOf(std::string_view topic, int32_t partition_key);
  void Submit(Pending p);
  void RetryRefused();
  // A refused batch may go again: true unless its append was in doubt and the WAL has
  // not said yet whether it kept it; one it kept is counted appended instead (*kept).
  bool MayRetry(Pending& p, bool* kept);
  void CountAppended(const Pending& p);
  void WarnDegraded(const std::string& event, const std::string& line);

  wal::AppendLog* const wal_;
  BruceRejections* const rejections_;
  const BruceIngestOptions options_;
  Pending batch_;  // the listener thread's
  std::function<void()> on_room_;
  LogRateLimiter log_{1, 10'000};

  mutable Mutex mu_;
  CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  size_t inflight_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Pending> refused_ ABSL_GUARDED_BY(mu_);
  int64_t retry_at_mono_ms_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t appended_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kspool::agent
