// SpoolService: the kspool.v1.Spool gRPC service. Send validates the whole request,
// appends it to the WAL as one atomic batch, and answers OK only once it is fsynced.
// Status codes: INVALID_ARGUMENT (bad input, names message index and field),
// RESOURCE_EXHAUSTED (WAL full), UNAVAILABLE (WAL I/O error or full disk). The last two
// carry the trailing metadata `retry-after-ms`, a hint when to try again.
// Thread safety: gRPC calls Send from many threads; that is what group commit feeds on.
#pragma once

#include <functional>

#include "agent/kafka_metadata.h"
#include "agent/metrics.h"
#include "agent/request_validator.h"
#include "kspool/v1/spool.grpc.pb.h"
#include "wal/wal.h"

namespace kspool::agent {

class SpoolService final : public kspool::v1::Spool::Service {
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

  grpc::Status Send(grpc::ServerContext* context, const kspool::v1::SendRequest* request,
                    kspool::v1::SendResponse* response) override;
  grpc::Status Broadcast(grpc::ServerContext* context, const kspool::v1::BroadcastRequest* request,
                         kspool::v1::BroadcastResponse* response) override;

 private:
  // Validates and appends `request` as one batch; fills the sequence numbers.
  grpc::Status Append(grpc::ServerContext* context, const kspool::v1::SendRequest& request,
                      kspool::v1::SendResponse* response);
  wal::Wal* const wal_;
  const RequestLimits limits_;
  const std::function<void()> on_appended_;
  const std::function<int64_t(absl::StatusCode)> retry_after_ms_;
  Metrics* const metrics_;
  KafkaMetadata* const metadata_;
};

// absl and gRPC share their status code numbering.
grpc::Status ToGrpc(const absl::Status& s);

}  // namespace kspool::agent
