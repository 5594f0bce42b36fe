#include "agent/drain_loop.h"

#include <spdlog/spdlog.h>

#include <random>

namespace kspool::agent {

DrainLoop::DrainLoop(wal::Wal* wal, CommitTracker* tracker, ProducerFactory factory,
                     DrainOptions options)
    : wal_(wal), tracker_(tracker), factory_(std::move(factory)), options_(options) {}

DrainLoop::~DrainLoop() { Stop(); }

absl::Status DrainLoop::Start() {
  absl::StatusOr<std::unique_ptr<KafkaProducer>> p = factory_();
  if (!p.ok()) return p.status();
  producer_ = std::move(p).value();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void DrainLoop::Notify() {
  MutexLock l(&wake_mu_);
  ++wake_count_;
  wake_cv_.Signal();
}

void DrainLoop::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  Notify();
  thread_.join();
}

void DrainLoop::Run() {
  std::vector<DeliveryReport> reports;
  while (!stop_.load()) {
    uint64_t seen_wakes;
    {
      MutexLock l(&wake_mu_);
      seen_wakes = wake_count_;
    }
    bool read_any = Refill();
    int64_t now = options_.clock->NowMillis();
    ProduceDue(now);
    reports.clear();
    // Block in librdkafka only while it has work whose reports we wait for.
    producer_->Poll(read_any ? 0 : (window_.empty() ? 0 : 5), &reports);
    now = options_.clock->NowMillis();
    HandleReports(reports, now);
    SettleAcked();
    ReplaceProducerIfFatal();
    if (now >= next_commit_update_ms_) {
      UpdateCommitPoint();
      next_commit_update_ms_ = now + static_cast<int64_t>(options_.commit_point_interval_ms);
    }
    if (!read_any && window_.empty()) {
      // Idle: sleep until an append or the next commit-point update.
      MutexLock l(&wake_mu_);
      if (wake_count_ == seen_wakes) {
        wake_cv_.WaitFor(&wake_mu_, std::chrono::milliseconds(options_.commit_point_interval_ms));
      }
    }
  }
  DrainForShutdown();
}

bool DrainLoop::Refill() {
  if (window_.size() >= options_.max_inflight_messages ||
      window_bytes_ >= options_.max_inflight_bytes) {
    return false;
  }
  std::vector<wal::Entry> entries;
  absl::Status s = wal_->Scan(cursor_, options_.max_inflight_messages - window_.size(),
                              options_.max_inflight_bytes - window_bytes_, &entries);
  if (!s.ok()) {
    spdlog::warn("drain: WAL scan failed, retrying: {}", s.ToString());
    return false;
  }
  for (wal::Entry& e : entries) {
    cursor_ = e.seq + 1;
    if (!e.status.ok()) {
      // An undecodable entry stays in the WAL and holds the commit point back: its
      // receive time is unknown, so no point past it can be vouched for.
      spdlog::error("drain: WAL entry {} cannot be decoded: {}", e.seq, e.status.ToString());
      undecodable_.insert(e.seq);
      continue;
    }
    window_bytes_ += e.size;
    uint64_t seq = e.seq;
    window_.emplace(seq, Slot{std::move(e)});
    ready_.insert(seq);
  }
  inflight_.store(window_.size());
  return !entries.empty();
}

void DrainLoop::ProduceDue(int64_t now_ms) {
  while (!backoff_.empty() && backoff_.begin()->first <= now_ms) {
    ready_.insert(backoff_.begin()->second);
    backoff_.erase(backoff_.begin());
  }
  while (!ready_.empty()) {
    const uint64_t seq = *ready_.begin();
    Slot& slot = window_.at(seq);
    rd_kafka_resp_err_t err = producer_->Produce(slot.entry);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return;  // try again after the next poll
    ready_.erase(ready_.begin());
    ++slot.attempts;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      slot.state = Slot::kInKafka;  // so that the local error is handled as a report
      HandleReports({DeliveryReport{seq, err, rd_kafka_err2str(err)}}, now_ms);
      continue;
    }
    if (slot.attempts > 1) redelivered_.fetch_add(1);
    slot.state = Slot::kInKafka;
  }
}

void DrainLoop::HandleReports(const std::vector<DeliveryReport>& reports, int64_t now_ms) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  for (const DeliveryReport& r : reports) {
    auto it = window_.find(r.seq);
    if (it == window_.end() || it->second.state == Slot::kAcked) continue;
    Slot& slot = it->second;
    if (r.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      slot.state = Slot::kAcked;
      acked_.push_back({r.seq, slot.entry.record.topic, slot.entry.size, "", "", ""});
      continue;
    }
    // Never discarded here: the entry stays in the WAL and is produced again later.
    uint64_t backoff = options_.retry_backoff_ms;
    for (int i = 1; i < slot.attempts && backoff < options_.retry_backoff_max_ms; ++i) backoff *= 2;
    backoff = std::min(backoff, options_.retry_backoff_max_ms);
    backoff = backoff / 2 + std::uniform_int_distribution<uint64_t>(0, backoff / 2)(rng);
    slot.state = Slot::kBackoff;
    backoff_.emplace(now_ms + static_cast<int64_t>(backoff), r.seq);
    if (slot.attempts <= 1 || slot.attempts % 10 == 0) {
      spdlog::warn("kafka: delivery of seq {} to {} failed (attempt {}): {}; retrying in {} ms",
                   r.seq, slot.entry.record.topic, slot.attempts, r.error, backoff);
    }
  }
}

void DrainLoop::SettleAcked() {
  if (acked_.empty()) return;
  absl::Status s = wal_->Settle(acked_);
  if (!s.ok()) {
    // The entries stay acked in the window and are settled on a later round.
    int64_t now = options_.clock->NowMillis();
    if (now - last_settle_error_log_ms_ > 5000) {
      spdlog::warn("drain: removing delivered entries from the WAL failed, will retry: {}",
                   s.ToString());
      last_settle_error_log_ms_ = now;
    }
    return;
  }
  for (const wal::Outcome& o : acked_) {
    auto it = window_.find(o.seq);
    window_bytes_ -= it->second.entry.size;
    window_.erase(it);
  }
  acked_.clear();
  inflight_.store(window_.size());
}

void DrainLoop::UpdateCommitPoint() {
  if (!undecodable_.empty()) return;
  std::map<std::string, int64_t> oldest;
  for (const auto& [seq, slot] : window_) {
    oldest.try_emplace(slot.entry.record.topic, slot.entry.record.receive_time_ms);
  }
  if (absl::Status s = tracker_->Update(cursor_, oldest); !s.ok()) {
    spdlog::warn("commit point: update failed, keeping the last one: {}", s.ToString());
  }
}

void DrainLoop::ReplaceProducerIfFatal() {
  std::string fatal = producer_->FatalError();
  if (fatal.empty()) return;
  spdlog::error("kafka: replacing the producer after a fatal error: {}", fatal);
  producer_->PurgeAll();
  std::vector<DeliveryReport> reports;
  producer_->Poll(0, &reports);
  HandleReports(reports, options_.clock->NowMillis());
  SettleAcked();
  absl::StatusOr<std::unique_ptr<KafkaProducer>> p = factory_();
  if (!p.ok()) {
    spdlog::error("kafka: cannot create a new producer: {}", p.status().ToString());
    return;
  }
  producer_ = std::move(p).value();  // the old one is destroyed: no more reports from it
  for (auto& [seq, slot] : window_) {
    if (slot.state == Slot::kInKafka) {
      slot.state = Slot::kToProduce;
      ready_.insert(seq);
    }
  }
}

void DrainLoop::DrainForShutdown() {
  const int64_t deadline = options_.clock->NowMillis() + static_cast<int64_t>(options_.shutdown_grace_ms);
  std::vector<DeliveryReport> reports;
  while (producer_->OutstandingMessages() > 0 && options_.clock->NowMillis() < deadline) {
    reports.clear();
    producer_->Poll(50, &reports);
    HandleReports(reports, options_.clock->NowMillis());
    SettleAcked();
  }
  // Whatever Kafka has not acknowledged stays in the WAL for the next start.
  producer_->PurgeAll();
  reports.clear();
  producer_->Poll(0, &reports);
  for (DeliveryReport& r : reports) {
    if (r.err != RD_KAFKA_RESP_ERR_NO_ERROR) r.seq = 0;  // purged: not a delivery
  }
  HandleReports(reports, options_.clock->NowMillis());
  SettleAcked();
  UpdateCommitPoint();
  producer_.reset();
  spdlog::info("drain: stopped; {} entries in flight stay in the WAL", window_.size());
}

}  // namespace kspool::agent
