// SpoolService: the kspool.v1.Spool gRPC service. Send validates the whole request,
// appends it to the WAL as one atomic batch, and answers OK only once it is fsynced.
// Status codes: INVALID_ARGUMENT (bad input, names message index and field),
// RESOURCE_EXHAUSTED (WAL full), UNAVAILABLE (WAL I/O error or full disk). The last two
// carry the trailing metadata `retry-after-ms`, a hint when to try again.
// Send uses gRPC's callback API: no thread waits for the fsync; the WAL's committer
// thread finishes the call, so one group commit can answer any number of Sends.
// Broadcast, rare and waiting for Kafka metadata, stays on the synchronous API.
// Thread safety: gRPC calls both from many threads.
#pragma once

#include <functional>

#include "absl/functional/any_invocable.h"
#include "agent/kafka_metadata.h"
#include "agent/metrics.h"
#include "agent/request_validator.h"
#include "kspool/v1/spool.grpc.pb.h"
#include "wal/wal.h"

namespace kspool::agent {

class SpoolService final
    : public kspool::v1::Spool::WithCallbackMethod_Send<kspool::v1::Spool::Service> {
 public:
  // `retry_after_ms` answers, for a rejected Send's status code, how long to wait.
  SpoolService(wal::Wal* wal, RequestLimits limits, std::function<void()> on_appended,
               std::function<int64_t(absl::StatusCode)> retry_after_ms, Metrics* metrics,
               KafkaMetadata* metadata)
      : wal_(wal),
        limits_(limits),
        on_appended_(std::move(on_appended)),
        retry_after_ms_(std::move(retry_after_ms)),
        metrics_(metrics),
        metadata_(metadata) {}

  grpc::ServerUnaryReactor* Send(grpc::CallbackServerContext* context,
                                 const kspool::v1::SendRequest* request,
                                 kspool::v1::SendResponse* response) override;
  grpc::Status Broadcast(grpc::ServerContext* context, const kspool::v1::BroadcastRequest* request,
                         kspool::v1::BroadcastResponse* response) override;

  // Told of every request received in full: its gRPC peer and serialized size (the
  // front door's ReceptionMeter). Set before serving.
  void set_on_received(std::function<void(const std::string& peer, size_t bytes)> f) {
    on_received_ = std::move(f);
  }

 private:
  using Done = absl::AnyInvocable<void(grpc::Status) &&>;
  // Validates and appends `request` as one batch; fills the sequence numbers, then calls
  // `done` (at once when the request is refused, else from the WAL's committer thread).
  // `context`, `request` and `response` must stay valid until then.
  void Append(grpc::ServerContextBase* context, const kspool::v1::SendRequest& request,
              kspool::v1::SendResponse* response, Done done);
  wal::Wal* const wal_;
  const RequestLimits limits_;
  const std::function<void()> on_appended_;
  const std::function<int64_t(absl::StatusCode)> retry_after_ms_;
  Metrics* const metrics_;
  std::function<void(const std::string& peer, size_t bytes)> on_received_;
  KafkaMetadata* const metadata_;
};

// absl and gRPC share their status code numbering.
grpc::Status ToGrpc(const absl::Status& s);

}  // namespace kspool::agent
