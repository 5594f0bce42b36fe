// AdminService: the kspool.v1.Admin gRPC service (commit points, WAL stats).
// Thread safety: read-only views over thread-safe parts; called from gRPC threads.
#pragma once

#include <functional>
#include <string>

#include "agent/security/access_control.h"
#include "agent/bruce/bruce_rejections.h"
#include "agent/drain/commit_tracker.h"
#include "agent/drain/drain_loop.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "base/clock.h"
#include "wal/inspection.h"

namespace kspool::agent {

class AdminService final : public kspool::v1::Admin::Service {
 public:
  AdminService(wal::Inspection* wal, CommitTracker* tracker, DrainLoop* drain, Clock* clock)
      : wal_(wal), tracker_(tracker), drain_(drain), clock_(clock) {}

  grpc::Status GetCommitPoint(grpc::ServerContext*, const kspool::v1::GetCommitPointRequest*,
                              kspool::v1::GetCommitPointResponse* response) override;
  grpc::Status GetWalStats(grpc::ServerContext*, const kspool::v1::GetWalStatsRequest*,
                           kspool::v1::GetWalStatsResponse* response) override;
  grpc::Status GetDiscardReport(grpc::ServerContext*, const kspool::v1::GetDiscardReportRequest*,
                                kspool::v1::GetDiscardReportResponse* response) override;

  // The Bruce/Dory-format input's refusals, added to the discard report. Set before
  // serving; must outlive this service.
  void set_bruce_rejections(const BruceRejections* r) { bruce_ = r; }

  // With --acl: every call needs the admin right. Set before serving; must outlive this.
  void set_access_control(AccessControl* access) { access_ = access; }

  // Told of every request received (peer, serialized size), like SpoolService, so the
  // front door's ReceptionMeter credits Admin calls too. Set before serving.
  void set_on_received(std::function<void(const std::string& peer, size_t bytes)> f) {
    on_received_ = std::move(f);
  }

 private:
  // `request` is null when the agent calls a handler itself (GET /discards).
  void Credit(grpc::ServerContext* context, const google::protobuf::MessageLite* request) {
    if (on_received_ && request) on_received_(context->peer(), request->ByteSizeLong());
  }

  // OK without --acl, for the agent's own calls (`request` null), and for callers with
  // the admin right; else PERMISSION_DENIED.
  grpc::Status Authorize(grpc::ServerContext* context, const google::protobuf::MessageLite* request,
                         std::string_view method);

  std::function<void(const std::string& peer, size_t bytes)> on_received_;
  const BruceRejections* bruce_ = nullptr;
  AccessControl* access_ = nullptr;
  wal::Inspection* const wal_;
  CommitTracker* const tracker_;
  DrainLoop* const drain_;
  Clock* const clock_;
};

}  // namespace kspool::agent
