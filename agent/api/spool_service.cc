#include "agent/api/spool_service.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <spdlog/spdlog.h>

namespace kspool::agent {
grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

wal::RecordView ViewOf(const kspool::v1::wire::Message& m) {
  wal::RecordView v;
  v.topic = m.topic();
  v.partition = m.has_partition() ? m.partition() : -1;
  if (m.has_key()) v.key = std::string_view(m.key());
  v.value = m.value();
  v.headers.reserve(m.headers_size());
  for (const kspool::v1::wire::Header& h : m.headers()) v.headers.emplace_back(h.key(), h.value());
  // Presence, not value: an explicit 0 stays 0.
  if (m.has_timestamp_ms()) v.client_timestamp_ms = m.timestamp_ms();
  return v;
}

SpoolService::SpoolService(wal::AppendLog* wal, wal::DeliveryQueries* deliveries,
                           RequestLimits limits, std::function<void()> on_appended,
                           std::function<int64_t(absl::StatusCode)> retry_after_ms,
                           Metrics* metrics, KafkaMetadata* metadata, Clock* clock,
                           uint64_t receive_memory_bytes, DeliveryWaiters* waiters,
                           DeliveryFeed* feed, uint64_t waiting_memory_bytes)
    : wal_(wal),
      deliveries_(deliveries),
      limits_(limits),
      on_appended_(std::move(on_appended)),
      retry_after_ms_(std::move(retry_after_ms)),
      metrics_(metrics),
      metadata_(metadata),
      clock_(clock),
      waiters_(waiters),
      feed_(feed),
      budget_(receive_memory_bytes),
      waiting_budget_(waiting_memory_bytes, "waiting memory") {}

SpoolService::~SpoolService() {
  MutexLock lock(&mu_);
  while (broadcasts_ > 0) broadcasts_done_.Wait(&mu_);
}

void SpoolService::SetRetryAfter(grpc::ServerContextBase* context, absl::StatusCode code) {
  context->AddTrailingMetadata("retry-after-ms", std::to_string(retry_after_ms_(code)));
}

void SpoolService::WarnRefused(const std::string& line) {
  uint64_t suppressed = 0;
  if (!refusal_log_.Admit(clock_->MonotonicMillis(), &suppressed)) return;
  if (suppressed == 0) {
    spdlog::warn("{}", line);
  } else {
    spdlog::warn("{} ({} more refusals not logged)", line, suppressed);
  }
}

void SpoolService::AnswersUnread(uint64_t bytes) {
  if (metrics_) metrics_->Degraded("stream_answers_unread");
  WarnRefused("a SendStream is not read further: " + std::to_string(bytes) +
              " bytes of its answers wait for its client to read them (at most " +
              std::to_string(kMaxStreamReplyBytes) + " a stream)");
}

absl::StatusOr<RequestMemoryBudget::Lease> SpoolService::Receive(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer& request,
    google::protobuf::MessageLite* out, const char* public_type) {
  const size_t size = request.Length();
  if (on_received_) on_received_(context->peer(), size);
  absl::StatusOr<RequestMemoryBudget::Lease> lease = budget_.Charge(size);
  if (!lease.ok()) {
    WarnRefused("request refused: " + std::string(lease.status().message()));
    return lease.status();
  }
  // The copy shares gRPC's slices (no bytes copied); protobuf reads them in place.
  grpc::ByteBuffer shared(request);
  grpc::ProtoBufferReader reader(&shared);
  if (!reader.status().ok() || !out->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError("request is not a valid " + std::string(public_type) + " (" +
                                      std::to_string(size) + " bytes)");
  }
  return lease;
}

void SpoolService::Append(wal::AppendBatch batch, RequestMemoryBudget::Lease lease,
                          Appended done) {
  const size_t n = batch.size();
  wal_->AppendAsync(std::move(batch), [this, n, lease = std::move(lease),
                                       done = std::move(done)](
                                          absl::StatusOr<wal::AppendResult> r) mutable {
    lease = {};  // the append is complete: the request's memory is the WAL's now
    if (!r.ok()) {
      WarnRefused("send: rejected " + std::to_string(n) + " messages: " + r.status().ToString());
    } else {
      on_appended_();
    }
    std::move(done)(std::move(r));
  });
}

}  // namespace kspool::agent
