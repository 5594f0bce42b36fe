// ReconcilerOptions: how KafkaReconciler (kafka_reconciler.h) reads partitions back after
// a restart; a header of its own so that the agent's config embeds them without the
// Kafka client's headers. Plain values.
#pragma once

#include <cstdint>

namespace kspool::agent {

struct ReconcilerOptions {
  uint64_t max_bytes_per_partition = 64ull << 20;
  int64_t scan_budget_ms = 10000;
  int64_t time_margin_ms = 60000;
  int64_t retry_backoff_ms = 250;
  int64_t retry_backoff_max_ms = 4000;
  int64_t max_hold_ms = 60000;  // stop trying after this (the drain's hold ends too)
  int workers = 2;
};

}  // namespace kspool::agent
