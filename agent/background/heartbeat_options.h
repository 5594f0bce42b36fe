// HeartbeatOptions: what the Heartbeater (heartbeater.h) sends, and how often. Embedded
// in the agent's Config, so these initializers are the flags' defaults. A value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kspool::agent {

struct HeartbeatOptions {
  uint64_t interval_ms = 0;         // 0: off
  std::vector<std::string> topics;  // empty: every topic the WAL tracks (TrackedTopics)
};

}  // namespace kspool::agent
