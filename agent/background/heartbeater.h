// Heartbeater: every interval, appends one heartbeat record to every partition of each
// heartbeat topic, through the WAL like any message, carrying the commit points.
//
// Record: header `kspool.heartbeat: 1` (plus kspool.agent and kspool.seq), explicit
// partition, no key, value JSON:
//   {"type":"kspool.heartbeat","agent_id":"…","commit_point_ms":T,
//    "topic_commit_point_ms":Tt,"created_ms":now,"topic":"…","partition":p}
// Guarantee: every message of that partition received at or before
// topic_commit_point_ms was acknowledged by Kafka before the heartbeat was even
// written, so it appears earlier in the partition.
// Thread safety: its own thread; Start/Stop from the owner.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "agent/background/heartbeat_options.h"
#include "agent/drain/commit_tracker.h"
#include "agent/kafka/kafka_metadata.h"
#include "agent/stats/metrics.h"
#include "base/clock.h"
#include "base/periodic_thread.h"
#include "wal/append_log.h"

namespace kspool::agent {

class Heartbeater {
 public:
  Heartbeater(wal::AppendLog* wal, CommitTracker* tracker, KafkaMetadata* metadata,
              Metrics* metrics, std::function<void()> on_appended, Clock* clock,
              HeartbeatOptions options);
  ~Heartbeater();
  void Start();
  void Stop();
  // One round now (also used by tests): returns the number of records appended.
  size_t Beat();

 private:
  wal::AppendLog* const wal_;
  CommitTracker* const tracker_;
  KafkaMetadata* const metadata_;
  Metrics* const metrics_;
  const std::function<void()> on_appended_;
  Clock* const clock_;
  const HeartbeatOptions options_;
  PeriodicThread thread_;
};

}  // namespace kspool::agent
