// Tally: what a load's calls report as they complete (on gRPC's callback threads),
// collected into a LoadResult at the end. Shared by the unary and streaming loads so
// both count and check answers the same way. Thread safe.
#pragma once

#include <atomic>
#include <cstdint>

#include "kspool/v1/spool.pb.h"
#include "tools/bench/load.h"
#include "base/mutex.h"

namespace kspool::bench {

class Tally {
 public:
  explicit Tally(bool wait_for_kafka) : wait_for_kafka_(wait_for_kafka) {}

  // An OK answer `latency_ms` after the request was sent (or scheduled): checks it
  // against the request and counts its good messages as acked.
  void Answered(const kspool::v1::SendRequest& request, const kspool::v1::SendResponse& response,
                double latency_ms);
  // A request that failed with gRPC status `code`.
  void Failed(int code);
  void SequenceRegression();
  void StreamFailed();

  uint64_t acked() const { return acked_.load(); }

  // Moves everything counted into a result (sorted latencies); call once, at the end.
  LoadResult Finish(double seconds);

 private:
  const bool wait_for_kafka_;
  std::atomic<uint64_t> acked_{0};
  Mutex mu_;
  LoadResult r_ ABSL_GUARDED_BY(mu_);  // all but acked and seconds
};

}  // namespace kspool::bench
