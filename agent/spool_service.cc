#include "agent/spool_service.h"

#include <spdlog/spdlog.h>

#include <future>

namespace kspool::agent {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::ServerUnaryReactor* SpoolService::Send(grpc::CallbackServerContext* context,
                                             const kspool::v1::SendRequest* request,
                                             kspool::v1::SendResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (on_received_) on_received_(context->peer(), request->ByteSizeLong());
  const auto start = std::chrono::steady_clock::now();
  Append(context, *request, response, [this, reactor, start](grpc::Status status) {
    if (metrics_) {
      metrics_->ObserveSend(
          status.error_code(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!status.ok()) metrics_->SendRejected(status.error_code());
    }
    reactor->Finish(status);
  });
  return reactor;
}

grpc::Status SpoolService::Broadcast(grpc::ServerContext* context,
                                     const kspool::v1::BroadcastRequest* request,
                                     kspool::v1::BroadcastResponse* response) {
  if (on_received_) on_received_(context->peer(), request->ByteSizeLong());
  std::vector<std::string> topics(request->topics().begin(), request->topics().end());
  if (topics.empty()) {
    for (const auto& [topic, stats] : wal_->GetStats().topics) topics.push_back(topic);
  }
  if (topics.empty()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "broadcast to all topics, but the agent has seen none yet; name them");
  }
  kspool::v1::SendRequest expanded;
  for (size_t i = 0; i < topics.size(); ++i) {
    if (absl::Status s = ValidateTopicName(topics[i]); !s.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "topics[" + std::to_string(i) + "]: " + std::string(s.message()));
    }
    absl::StatusOr<int> n = metadata_->PartitionCount(topics[i], 5000);
    if (!n.ok()) {
      return grpc::Status(absl::IsNotFound(n.status()) ? grpc::StatusCode::NOT_FOUND
                                                       : grpc::StatusCode::UNAVAILABLE,
                          "broadcast: " + std::string(n.status().message()));
    }
    for (int p = 0; p < *n; ++p) {
      kspool::v1::Message* m = expanded.add_messages();
      *m = request->message();
      m->set_topic(topics[i]);
      m->set_partition(p);
    }
  }
  kspool::v1::SendResponse sent;
  std::promise<grpc::Status> appended;
  Append(context, expanded, &sent, [&appended](grpc::Status s) { appended.set_value(s); });
  grpc::Status status = appended.get_future().get();
  if (!status.ok()) return status;
  for (int i = 0; i < expanded.messages_size(); ++i) {
    auto* t = response->add_targets();
    t->set_topic(expanded.messages(i).topic());
    t->set_partition(expanded.messages(i).partition());
    t->set_sequence(sent.sequence(i));
  }
  response->set_receive_time_ms(sent.receive_time_ms());
  return status;
}

void SpoolService::Append(grpc::ServerContextBase* context, const kspool::v1::SendRequest& request,
                          kspool::v1::SendResponse* response, Done done) {
  if (absl::Status s = ValidateSendRequest(request, limits_); !s.ok()) {
    std::move(done)(ToGrpc(s));
    return;
  }
  wal::AppendBatch batch;
  for (const kspool::v1::Message& m : request.messages()) {
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
  wal_->AppendAsync(std::move(batch), [this, context, response, n, done = std::move(done)](
                                          absl::StatusOr<wal::AppendResult> r) mutable {
    if (!r.ok()) {
      spdlog::warn("send: rejected {} messages: {}", n, r.status().ToString());
      context->AddTrailingMetadata("retry-after-ms",
                                   std::to_string(retry_after_ms_(r.status().code())));
      std::move(done)(ToGrpc(r.status()));
      return;
    }
    on_appended_();
    response->mutable_sequence()->Reserve(static_cast<int>(n));
    for (size_t i = 0; i < n; ++i) response->add_sequence(r->first_seq + i);
    response->set_receive_time_ms(r->receive_time_ms);
    std::move(done)(grpc::Status::OK);
  });
}

}  // namespace kspool::agent
