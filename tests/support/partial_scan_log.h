// PartialScanLog: the drain's view of the WAL (wal::DrainLog), passing everything to a
// real WAL, that can end the next choosing scan the way a WAL did before partial scans
// had a contract, when its iterator failed after some entries were offered: the entries
// taken so far in the output, an error, and *next left at the start of the range. The
// drain must never take such an entry twice. Real read faults (fault_fs.h) seldom hit a
// small log halfway through a scan; this produces that outcome on demand. It can also
// refuse every Settle() for a while.
// Thread safety: none; one test thread. The WAL outlives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "wal/wal.h"

namespace kspool::testing {

class PartialScanLog final : public wal::DrainLog {
 public:
  static constexpr size_t kAll = std::numeric_limits<size_t>::max();

  explicit PartialScanLog(wal::Wal* wal) : wal_(wal) {}
  // The next scan fails after offering at most `n` entries (kAll: whatever it offers).
  void FailNextScan(size_t n = kAll) { fail_after_ = n; armed_ = true; }
  void Disarm() { armed_ = false; }
  // While set, every Settle() fails (UNAVAILABLE) and removes nothing.
  void FailSettles(bool fail) { fail_settles_ = fail; }
  int failed_scans() const { return failed_scans_; }
  // Runs before every scan (the drain simulator waits there for RocksDB's background
  // jobs, so that what a scan reads does not depend on their timing).
  void BeforeScan(std::function<void()> hook) { before_scan_ = std::move(hook); }

  absl::Status ScanChoosing(const wal::ScanRange& range,
                            const std::function<wal::ScanChoice(const wal::ScanCandidate&)>& choose,
                            std::vector<wal::Entry>* out, uint64_t* next) override {
    if (before_scan_) before_scan_();
    if (!armed_) return wal_->ScanChoosing(range, choose, out, next);
    armed_ = false;
    size_t offered = 0;
    auto stop_at_limit = [&](const wal::ScanCandidate& c) {
      if (offered == fail_after_) return wal::ScanChoice::kStop;
      ++offered;
      return choose(c);
    };
    absl::Status s = wal_->ScanChoosing(range, stop_at_limit, out, next);
    if (!s.ok()) return s;
    ++failed_scans_;
    *next = range.from_seq;
    return absl::DataLossError("injected: scan WAL: Corruption: block checksum mismatch");
  }
  absl::Status Settle(const std::vector<wal::Outcome>& outcomes) override {
    if (fail_settles_) return absl::UnavailableError("injected: settle refused");
    return wal_->Settle(outcomes);
  }
  absl::Status Reopen() override { return wal_->Reopen(); }
  uint64_t reopens() const override { return wal_->reopens(); }
  uint64_t rescan_from() const override { return wal_->rescan_from(); }
  absl::StatusOr<std::vector<wal::RoutingBound>> RoutingBounds(const std::string& topic) override {
    return wal_->RoutingBounds(topic);
  }
  absl::StatusOr<std::vector<wal::RoutingBound>> SaveRoutingBound(
      const std::string& topic, wal::RoutingBound bound) override {
    return wal_->SaveRoutingBound(topic, bound);
  }
  absl::Status health() const override { return wal_->health(); }
  std::string agent_id() const override { return wal_->agent_id(); }
  wal::Stats GetStats() const override { return wal_->GetStats(); }
  wal::CommitPoints SavedCommitPoints() const override { return wal_->SavedCommitPoints(); }
  std::vector<std::string> TrackedTopics() const override { return wal_->TrackedTopics(); }

 private:
  wal::Wal* const wal_;
  bool armed_ = false;
  size_t fail_after_ = kAll;
  int failed_scans_ = 0;
  bool fail_settles_ = false;
  std::function<void()> before_scan_;
};

}  // namespace kspool::testing
