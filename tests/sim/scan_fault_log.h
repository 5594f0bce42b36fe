// ScanFaultLog: the drain's view of the WAL (wal::DrainLog) for the simulator, passing
// everything to the real WAL but able to end the next choosing scan the way RocksWal ends
// one whose iterator fails after some entries were offered (rocks_wal_read.cc): the
// entries taken so far are in the output, the status is an I/O error, and *next is the
// start of the range. With 64 KiB blocks the simulator's small logs rarely span two
// blocks, so a read fault of the file system alone (fault_fs.h) seldom hits a scan
// halfway; this reproduces that outcome on demand.
// Thread safety: none; the simulation's one thread.
#pragma once

#include "wal/wal.h"

namespace kspool::sim {

class ScanFaultLog final : public wal::DrainLog {
 public:
  explicit ScanFaultLog(wal::Wal* wal) : wal_(wal) {}
  void FailNextScan() { fail_next_ = true; }
  void Disarm() { fail_next_ = false; }

  absl::Status ScanChoosing(const wal::ScanRange& range,
                            const std::function<wal::ScanChoice(const wal::ScanCandidate&)>& choose,
                            std::vector<wal::Entry>* out, uint64_t* next) override {
    absl::Status s = wal_->ScanChoosing(range, choose, out, next);
    if (!s.ok() || !fail_next_) return s;
    fail_next_ = false;
    *next = range.from_seq;
    return absl::DataLossError("simulated: scan WAL: Corruption: block checksum mismatch");
  }
  absl::Status Settle(const std::vector<wal::Outcome>& outcomes) override {
    return wal_->Settle(outcomes);
  }
  absl::Status Reopen() override { return wal_->Reopen(); }
  uint64_t reopens() const override { return wal_->reopens(); }
  absl::Status health() const override { return wal_->health(); }
  std::string agent_id() const override { return wal_->agent_id(); }
  wal::Stats GetStats() const override { return wal_->GetStats(); }
  wal::CommitPoints SavedCommitPoints() const override { return wal_->SavedCommitPoints(); }
  std::vector<std::string> TrackedTopics() const override { return wal_->TrackedTopics(); }

 private:
  wal::Wal* const wal_;
  bool fail_next_ = false;
};

}  // namespace kspool::sim
