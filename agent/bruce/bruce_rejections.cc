#include "agent/bruce/bruce_rejections.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kspool::agent {

void BruceRejections::Record(BruceReject reason, std::string_view transport, std::string_view bytes,
                             std::string_view error) {
  const std::string_view name = BruceRejectName(reason);
  if (metrics_) metrics_->BruceRejected(name);
  kspool::v1::BruceRejectedInput kept;
  kept.set_reason(std::string(name));
  kept.set_time_ms(clock_->NowMillis());
  kept.set_transport(std::string(transport));
  kept.set_size(bytes.size());
  kept.set_first_bytes(std::string(bytes.substr(0, kKeptBytes)));
  kept.set_error(std::string(error));
  {
    MutexLock l(&mu_);
    ++counts_[Index(reason)];
    auto& q = recent_[Index(reason)];
    q.push_back(std::move(kept));
    if (q.size() > kKeptPerReason) q.pop_front();
  }
  uint64_t suppressed = 0;
  if (!log_.Admit(clock_->MonotonicMillis(), &suppressed)) return;
  spdlog::warn("bruce input: refused {} bytes from a {} client ({}): {}{}", bytes.size(), transport,
               name, error,
               suppressed ? " (" + std::to_string(suppressed) + " more refusals not logged)"
                          : std::string());
}

uint64_t BruceRejections::count(BruceReject reason) const {
  MutexLock l(&mu_);
  return counts_[Index(reason)];
}

void BruceRejections::AddTo(kspool::v1::GetDiscardReportResponse* report) const {
  std::vector<kspool::v1::BruceRejectedInput> all;
  {
    MutexLock l(&mu_);
    for (BruceReject r : kAllBruceRejects) {
      auto* c = report->add_bruce_rejected();
      c->set_reason(std::string(BruceRejectName(r)));
      c->set_count(counts_[Index(r)]);
      all.insert(all.end(), recent_[Index(r)].begin(), recent_[Index(r)].end());
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.time_ms() < b.time_ms(); });
  for (auto& k : all) *report->add_bruce_recent() = std::move(k);
}

}  // namespace kspool::agent
