// AgentClient: kspoolctl's connection to a running agent's gRPC services. Every call
// has the deadline given at construction; errors name the agent and the gRPC code.
// Thread safety: one instance per thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "kspool/v1/spool.grpc.pb.h"

namespace kspool::ctl {

class AgentClient {
 public:
  AgentClient(const std::string& address, int timeout_ms);

  absl::StatusOr<kspool::v1::SendResponse> Send(const kspool::v1::SendRequest& request);
  absl::StatusOr<kspool::v1::GetCommitPointResponse> GetCommitPoint();
  absl::StatusOr<kspool::v1::GetWalStatsResponse> GetWalStats();
  absl::StatusOr<kspool::v1::GetDiscardReportResponse> GetDiscardReport();

 private:
  std::unique_ptr<grpc::ClientContext> Context() const;

  std::string address_;
  int timeout_ms_;
  std::unique_ptr<kspool::v1::Spool::Stub> spool_;
  std::unique_ptr<kspool::v1::Admin::Stub> admin_;
};

}  // namespace kspool::ctl
