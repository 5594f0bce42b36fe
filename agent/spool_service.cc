#include "agent/spool_service.h"

#include <spdlog/spdlog.h>

namespace kspool::agent {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status SpoolService::Send(grpc::ServerContext* context, const kspool::v1::SendRequest* request,
                                kspool::v1::SendResponse* response) {
  if (absl::Status s = ValidateSendRequest(*request, limits_); !s.ok()) return ToGrpc(s);
  wal::AppendBatch batch;
  for (const kspool::v1::Message& m : request->messages()) {
    wal::RecordView v;
    v.topic = m.topic();
    v.partition = m.has_partition() ? m.partition() : -1;
    if (m.has_key()) v.key = std::string_view(m.key());
    v.value = m.value();
    v.headers.reserve(m.headers_size());
    for (const kspool::v1::Header& h : m.headers()) v.headers.emplace_back(h.key(), h.value());
    if (m.has_timestamp_ms()) v.client_timestamp_ms = m.timestamp_ms();
    batch.Add(v);
  }
  const size_t n = batch.size();
  absl::StatusOr<wal::AppendResult> r = wal_->Append(std::move(batch));
  if (!r.ok()) {
    spdlog::warn("send: rejected {} messages: {}", n, r.status().ToString());
    context->AddTrailingMetadata("retry-after-ms",
                                 std::to_string(retry_after_ms_(r.status().code())));
    return ToGrpc(r.status());
  }
  on_appended_();
  response->mutable_sequence()->Reserve(static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) response->add_sequence(r->first_seq + i);
  response->set_receive_time_ms(r->receive_time_ms);
  return grpc::Status::OK;
}

}  // namespace kspool::agent
