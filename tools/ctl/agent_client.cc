#include "tools/ctl/agent_client.h"

#include "tools/common/client_tls.h"

namespace kspool::ctl {
namespace {

absl::Status FromGrpc(const grpc::Status& s, const std::string& address) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      "agent " + address + ": " +
                          absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())) +
                          ": " + s.error_message());
}

}  // namespace

AgentClient::AgentClient(const std::string& address, int timeout_ms, const AgentTls& tls)
    : address_(address), timeout_ms_(timeout_ms) {
  auto channel =
      grpc::CreateChannel(address, tools::ClientChannelCredentials(tls.ca, tls.cert, tls.key));
  spool_ = kspool::v1::Spool::NewStub(channel);
  admin_ = kspool::v1::Admin::NewStub(channel);
}

std::unique_ptr<grpc::ClientContext> AgentClient::Context() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
  return ctx;
}

absl::StatusOr<kspool::v1::SendResponse> AgentClient::Send(const kspool::v1::SendRequest& req,
                                                           std::string* trailer_sequences) {
  kspool::v1::SendResponse resp;
  auto ctx = Context();
  absl::Status s = FromGrpc(spool_->Send(ctx.get(), req, &resp), address_);
  if (!s.ok()) {
    if (trailer_sequences) {
      const auto& trailers = ctx->GetServerTrailingMetadata();
      auto it = trailers.find("kspool-sequences");
      trailer_sequences->assign(
          it == trailers.end() ? "" : std::string(it->second.data(), it->second.size()));
    }
    return s;
  }
  return resp;
}

absl::StatusOr<kspool::v1::GetDeliveryStatusResponse> AgentClient::GetDeliveryStatus(
    const kspool::v1::GetDeliveryStatusRequest& req) {
  kspool::v1::GetDeliveryStatusResponse resp;
  auto ctx = Context();
  absl::Status s = FromGrpc(spool_->GetDeliveryStatus(ctx.get(), req, &resp), address_);
  if (!s.ok()) return s;
  return resp;
}

std::unique_ptr<DeliveryWatch> AgentClient::WatchDeliveries(uint64_t from_sequence) {
  return std::make_unique<DeliveryWatch>(address_, *spool_, from_sequence);
}

DeliveryWatch::DeliveryWatch(const std::string& address, kspool::v1::Spool::Stub& stub,
                             uint64_t from_sequence)
    : address_(address) {
  kspool::v1::WatchDeliveriesRequest req;
  req.set_from_sequence(from_sequence);
  reader_ = stub.WatchDeliveries(&ctx_, req);
}

bool DeliveryWatch::Next(kspool::v1::DeliveryStatus* status) { return reader_->Read(status); }

absl::Status DeliveryWatch::Finish() { return FromGrpc(reader_->Finish(), address_); }

absl::StatusOr<kspool::v1::GetCommitPointResponse> AgentClient::GetCommitPoint() {
  kspool::v1::GetCommitPointResponse resp;
  auto ctx = Context();
  absl::Status s = FromGrpc(admin_->GetCommitPoint(ctx.get(), {}, &resp), address_);
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<kspool::v1::GetWalStatsResponse> AgentClient::GetWalStats() {
  kspool::v1::GetWalStatsResponse resp;
  auto ctx = Context();
  absl::Status s = FromGrpc(admin_->GetWalStats(ctx.get(), {}, &resp), address_);
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<kspool::v1::GetDiscardReportResponse> AgentClient::GetDiscardReport() {
  kspool::v1::GetDiscardReportResponse resp;
  auto ctx = Context();
  absl::Status s = FromGrpc(admin_->GetDiscardReport(ctx.get(), {}, &resp), address_);
  if (!s.ok()) return s;
  return resp;
}

}  // namespace kspool::ctl
