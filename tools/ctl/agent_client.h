// AgentClient: kspoolctl's connection to a running agent's gRPC services. Every unary
// call has the deadline given at construction (a watch has none); errors name the agent
// and the gRPC code.
// Thread safety: one instance per thread; DeliveryWatch::Cancel from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "kspool/v1/spool.grpc.pb.h"

namespace kspool::ctl {

// A WatchDeliveries call in progress: the statuses in sequence order, until the agent
// ends the call or Cancel() is called.
class DeliveryWatch {
 public:
  DeliveryWatch(const std::string& address, kspool::v1::Spool::Stub& stub, uint64_t from_sequence);
  // False when the call has ended; then Finish() says how.
  bool Next(kspool::v1::DeliveryStatus* status);
  // Ends the call (it then ends with CANCELLED); safe from any thread, also more than once.
  void Cancel() { ctx_.TryCancel(); }
  absl::Status Finish();

 private:
  std::string address_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<kspool::v1::DeliveryStatus>> reader_;
};

// TLS towards a secured agent (docs/SECURITY.md, "TLS"); all empty: plaintext.
struct AgentTls {
  std::string ca;    // PEM CA(s) the agent's certificate must chain to; empty: system roots
  std::string cert;  // PEM client certificate, for an agent with --tls-client-ca
  std::string key;   // its private key
  bool enabled() const { return !ca.empty() || !cert.empty(); }
};

class AgentClient {
 public:
  // The files of `tls` must be readable (kspoolctl's flags check that first).
  AgentClient(const std::string& address, int timeout_ms, const AgentTls& tls = {});

  // On failure, `trailer_sequences` (if given) gets the trailing metadata
  // `kspool-sequences` ("first..last"), which a WAIT_FOR_KAFKA Send whose deadline passed
  // after the WAL write carries; empty if the agent sent none.
  absl::StatusOr<kspool::v1::SendResponse> Send(const kspool::v1::SendRequest& request,
                                                std::string* trailer_sequences = nullptr);
  absl::StatusOr<kspool::v1::GetDeliveryStatusResponse> GetDeliveryStatus(
      const kspool::v1::GetDeliveryStatusRequest& request);
  std::unique_ptr<DeliveryWatch> WatchDeliveries(uint64_t from_sequence);
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
