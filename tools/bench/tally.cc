#include "tools/bench/tally.h"

#include <algorithm>

#include "tools/bench/request.h"

namespace kspool::bench {

void Tally::Answered(const kspool::v1::SendRequest& request,
                     const kspool::v1::SendResponse& response, double latency_ms) {
  ResponseCheck c = CheckResponse(request, response, wait_for_kafka_);
  acked_.fetch_add(c.good);
  MutexLock l(&mu_);
  ++r_.requests;
  r_.latencies_ms.push_back(latency_ms);
  for (const auto& [check, n] : c.errors) r_.check_errors[check] += n;
  if (c.last_delivered_ms >= 0) {
    r_.outcome_ms.push_back(static_cast<double>(c.last_delivered_ms - response.receive_time_ms()));
  }
}

void Tally::Failed(int code) {
  MutexLock l(&mu_);
  ++r_.requests;
  ++r_.failures[CodeName(code)];
}

void Tally::SequenceRegression() {
  MutexLock l(&mu_);
  ++r_.sequence_regressions;
}

void Tally::StreamFailed() {
  MutexLock l(&mu_);
  ++r_.streams_failed;
}

LoadResult Tally::Finish(double seconds) {
  MutexLock l(&mu_);
  LoadResult r = std::move(r_);
  r_ = LoadResult{};
  r.acked = acked_.load();
  r.seconds = seconds;
  std::sort(r.latencies_ms.begin(), r.latencies_ms.end());
  std::sort(r.outcome_ms.begin(), r.outcome_ms.end());
  return r;
}

}  // namespace kspool::bench
