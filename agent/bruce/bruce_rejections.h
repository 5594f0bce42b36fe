// BruceRejections: what the Bruce/Dory-format input refused, for the operator. Each
// refusal is counted (kspool_bruce_rejected_total{reason}), logged as a warning (at most
// 10 lines per 10 s) and kept, with the first 256 bytes of the input, among the most
// recent of its reason (kKeptPerReason), for the discard report (GET /discards, Admin
// GetDiscardReport). Refused input never reached the WAL: the counts start at 0 with each
// agent process.
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "agent/bruce/bruce_codec.h"
#include "base/log_rate_limiter.h"
#include "agent/stats/metrics.h"
#include "kspool/v1/admin.pb.h"
#include "base/clock.h"
#include "base/mutex.h"

namespace kspool::agent {

class BruceRejections {
 public:
  static constexpr size_t kKeptPerReason = 8;
  static constexpr size_t kKeptBytes = 256;

  // `metrics` may be null (tests).
  BruceRejections(Metrics* metrics, Clock* clock) : metrics_(metrics), clock_(clock) {}

  // One refused input: `bytes` as received (only the first kKeptBytes are kept), its
  // transport ("datagram", "stream", "tcp") and why.
  void Record(BruceReject reason, std::string_view transport, std::string_view bytes,
              std::string_view error);

  uint64_t count(BruceReject reason) const;
  // Adds the counts of every reason and the inputs kept, oldest first, to `report`.
  void AddTo(kspool::v1::GetDiscardReportResponse* report) const;

 private:
  static size_t Index(BruceReject r) { return static_cast<size_t>(r); }

  Metrics* const metrics_;
  Clock* const clock_;
  LogRateLimiter log_{10, 10'000};
  mutable Mutex mu_;
  std::array<uint64_t, std::size(kAllBruceRejects)> counts_ ABSL_GUARDED_BY(mu_){};
  std::array<std::deque<kspool::v1::BruceRejectedInput>, std::size(kAllBruceRejects)> recent_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace kspool::agent
