#include "agent/bruce/bruce_ingest.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace kspool::agent {
namespace {

constexpr int64_t kMetadataPollMs = 20;
constexpr int32_t kStopping = -2;

}  // namespace

std::string_view BruceTransportName(BruceTransport t) {
  switch (t) {
    case BruceTransport::kDatagram:
      return "datagram";
    case BruceTransport::kStream:
      return "stream";
    case BruceTransport::kTcp:
      return "tcp";
  }
  return "datagram";
}

BruceIngest::BruceIngest(wal::AppendLog* wal, BruceRejections* rejections,
                         BruceIngestOptions options)
    : wal_(wal), rejections_(rejections), options_(std::move(options)) {}

BruceIngest::~BruceIngest() {
  Stop();
  Flush();  // the listener has stopped: its last batch goes to the WAL without waiting
  MutexLock l(&mu_);
  while (inflight_ > 0) changed_.Wait(&mu_);
  uint64_t lost = 0;
  for (const Pending& p : refused_) lost += p.batch.size();
  if (lost > 0) {
    spdlog::error(
        "bruce input: {} messages read from the sockets were refused by the WAL "
        "until shutdown and are not kept",
        lost);
  }
}

void BruceIngest::Stop() {
  MutexLock l(&mu_);
  stopping_ = true;
  changed_.SignalAll();
}

bool BruceIngest::HasRoom() const {
  MutexLock l(&mu_);
  return inflight_ < options_.max_inflight_appends && refused_.empty();
}

bool BruceIngest::WalIdle() const {
  MutexLock l(&mu_);
  return inflight_ == 0 && refused_.empty();
}

bool BruceIngest::Refused() const {
  MutexLock l(&mu_);
  return inflight_ == 0 && !refused_.empty();
}

uint64_t BruceIngest::appended() const {
  MutexLock l(&mu_);
  return appended_;
}

void BruceIngest::WarnDegraded(const std::string& event, const std::string& line) {
  if (options_.metrics) options_.metrics->Degraded(event);
  uint64_t suppressed = 0;
  if (!log_.Admit(options_.clock->MonotonicMillis(), &suppressed)) return;
  spdlog::warn("bruce input: {}{}", line,
               suppressed ? " (" + std::to_string(suppressed) + " more not logged)" : "");
}

void BruceIngest::Accept(std::string_view bytes, BruceTransport transport, size_t max_bytes) {
  const std::string_view tname = BruceTransportName(transport);
  absl::StatusOr<BruceMessage> m = DecodeBruceMessage(bytes, max_bytes);
  absl::Status bad = m.status();
  if (bad.ok() && m->key.size() + m->value.size() > options_.limits.max_message_bytes) {
    bad = BruceError(BruceReject::kTooLong, "key + value are " +
                                                std::to_string(m->key.size() + m->value.size()) +
                                                " bytes; --max-message-bytes is " +
                                                std::to_string(options_.limits.max_message_bytes));
  }
  if (bad.ok()) {
    absl::Status ts =
        ValidateClientTimestamp(m->timestamp_ms, options_.limits, options_.clock->NowMillis());
    if (!ts.ok()) bad = BruceError(BruceReject::kMalformed, std::string(ts.message()));
  }
  int32_t partition = -1;
  if (bad.ok() && m->partition_key) {
    absl::StatusOr<int32_t> p = PartitionOf(m->topic, *m->partition_key);
    if (p.ok() && *p == kStopping) {
      WarnDegraded("bruce_lost_at_shutdown",
                   "a PartitionKey message was waiting for its topic's partition count at "
                   "shutdown and is not kept");
      return;
    }
    if (p.ok()) partition = *p;
    bad = p.status();
  }
  if (!bad.ok()) {
    rejections_->Record(BruceRejectReason(bad), tname, bytes, std::string(bad.message()));
    return;
  }
  wal::RecordView v;
  v.topic = m->topic;
  v.partition = partition;
  if (!m->key.empty()) v.key = m->key;
  v.value = m->value;
  v.client_timestamp_ms = m->timestamp_ms;
  batch_.batch.Add(v);
  ++batch_.by_transport[static_cast<size_t>(transport)];
  if (batch_.batch.size() >= options_.max_batch_messages ||
      batch_.batch.bytes() >= options_.max_batch_bytes) {
    Flush();
  }
}

absl::StatusOr<int32_t> BruceIngest::PartitionOf(std::string_view topic, int32_t partition_key) {
  const std::string name(topic);
  bool warned = false;
  while (true) {
    std::shared_ptr<const TopicLayout> layout = options_.partitions->Get(name);
    if (absl::IsNotFound(layout->status)) {
      return BruceError(BruceReject::kBadTopic, "topic: \"" + name +
                                                    "\" does not exist in Kafka (a PartitionKey "
                                                    "message needs its partition count)");
    }
    // A known count is kept while Kafka cannot be asked (PartitionCache).
    if (layout->partition_count() > 0) {
      return BrucePartitionFor(partition_key, layout->partition_count());
    }
    if (!warned) {
      warned = true;
      // What was read before this message goes to the WAL while it waits.
      Flush();
      WarnDegraded("bruce_partition_count_wait",
                   "waiting for Kafka's metadata of topic \"" + name +
                       "\" to place a PartitionKey message; reading paused (" +
                       layout->status.ToString() + ")");
    }
    MutexLock l(&mu_);
    if (stopping_) return kStopping;
    changed_.WaitFor(&mu_, std::chrono::milliseconds(kMetadataPollMs));
    if (stopping_) return kStopping;
  }
}

void BruceIngest::Flush() {
  RetryRefused();
  if (batch_.batch.empty()) return;
  Pending p = std::move(batch_);
  batch_ = Pending{};
  Submit(std::move(p));
}

void BruceIngest::RetryRefused() {
  // While the WAL refuses, nothing new is appended (and the listener reads nothing):
  // the refused batches go again, first, until the WAL takes them.
  while (true) {
    std::deque<Pending> again;
    {
      MutexLock l(&mu_);
      if (refused_.empty()) return;
      // Wait out the delay and the appends still in the WAL's hands (their outcome).
      while (!stopping_ &&
             (inflight_ > 0 || options_.clock->MonotonicMillis() < retry_at_mono_ms_)) {
        changed_.WaitFor(&mu_, std::chrono::milliseconds(kMetadataPollMs));
      }
      if (stopping_ || refused_.empty()) return;
      again.swap(refused_);
    }
    for (size_t i = 0; i < again.size(); ++i) {
      bool kept = false;
      if (!MayRetry(again[i], &kept)) {
        // Not reopened yet: this batch and those after it wait, in order.
        MutexLock l(&mu_);
        retry_at_mono_ms_ = options_.clock->MonotonicMillis() + kMetadataPollMs * 5;
        refused_.insert(refused_.begin(), std::make_move_iterator(again.begin() + i),
                        std::make_move_iterator(again.end()));
        break;
      }
      if (kept) {
        CountAppended(again[i]);
        continue;
      }
      Submit(std::move(again[i]));
    }
  }
}

bool BruceIngest::MayRetry(Pending& p, bool* kept) {
  *kept = false;
  if (!p.in_doubt_seq) return true;
  absl::StatusOr<bool> answer = wal_->AppendKept(*p.in_doubt_seq);
  if (absl::IsUnavailable(answer.status())) return false;
  if (!answer.ok()) {
    // Forgotten (more failed appends since than the WAL remembers): appending again may
    // store it twice, which a loss would be worse than.
    WarnDegraded("bruce_append_outcome_unknown",
                 "the outcome of a failed append of " + std::to_string(p.batch.size()) +
                     " messages is unknown (" + answer.status().ToString() +
                     "); appending them again (a duplicate is possible)");
  } else if (*answer) {
    spdlog::info("bruce input: the WAL kept the failed append of {} messages (seq {}); not "
                 "appended again",
                 p.batch.size(), *p.in_doubt_seq);
    *kept = true;
  }
  p.in_doubt_seq.reset();
  return true;
}

void BruceIngest::CountAppended(const Pending& p) {
  if (options_.on_appended) options_.on_appended();
  if (options_.metrics) {
    for (BruceTransport t :
         {BruceTransport::kDatagram, BruceTransport::kStream, BruceTransport::kTcp}) {
      const uint64_t c = p.by_transport[static_cast<size_t>(t)];
      if (c) options_.metrics->BruceAppended(BruceTransportName(t), c);
    }
  }
  MutexLock l(&mu_);
  appended_ += p.batch.size();
}

void BruceIngest::Submit(Pending p) {
  {
    MutexLock l(&mu_);
    while (!stopping_ && inflight_ >= options_.max_inflight_appends) changed_.Wait(&mu_);
    ++inflight_;
  }
  // Kept for a retry: a refused batch is gone once AppendAsync has taken it.
  auto kept = std::make_shared<Pending>(p);
  wal_->AppendAsync(std::move(p.batch), [this, kept](absl::StatusOr<wal::AppendResult> r) {
    const size_t n = kept->batch.size();
    if (r.ok()) {
      CountAppended(*kept);
    } else {
      WarnDegraded("bruce_append_refused",
                   "the WAL refused " + std::to_string(n) + " messages (" + r.status().ToString() +
                       "); reading paused, retrying: clients wait in the socket buffers");
    }
    std::function<void()> on_room = on_room_;
    {
      MutexLock l(&mu_);
      if (!r.ok()) {
        const int64_t delay =
            options_.retry_after_ms ? options_.retry_after_ms(r.status().code()) : 200;
        retry_at_mono_ms_ = options_.clock->MonotonicMillis() + std::max<int64_t>(delay, 10);
        kept->in_doubt_seq = wal::AppendInDoubtSeq(r.status());
        refused_.push_back(std::move(*kept));
      }
      --inflight_;
      changed_.SignalAll();
    }
    if (on_room) on_room();
  });
}

}  // namespace kspool::agent
