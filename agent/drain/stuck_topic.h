// StuckTopic: a topic that holds entries back, as the drain loop reports it to metrics
// and /status. Thread safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kspool::agent {

// A topic that has had entries to send and no delivery for DrainOptions::stuck_after_ms.
struct StuckTopic {
  std::string topic;
  double stuck_seconds = 0;
  uint64_t waiting_entries = 0;                // in the window (unread ones are not counted)
  std::vector<int32_t> leaderless_partitions;  // partitions of the topic without a leader
};

}  // namespace kspool::agent
