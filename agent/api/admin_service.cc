#include "agent/api/admin_service.h"

#include "agent/delivery/discard_report.h"
#include "agent/security/peer_identity.h"

namespace kspool::agent {

grpc::Status AdminService::Authorize(grpc::ServerContext* context,
                                     const google::protobuf::MessageLite* request,
                                     std::string_view method) {
  if (access_ == nullptr || request == nullptr) return grpc::Status::OK;
  absl::Status s = access_->CheckAdmin(access_->For(PeerIdentities(*context)), method);
  return s.ok() ? grpc::Status::OK
                : grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(s.message()));
}

grpc::Status AdminService::GetCommitPoint(grpc::ServerContext* context,
                                          const kspool::v1::GetCommitPointRequest* request,
                                          kspool::v1::GetCommitPointResponse* response) {
  Credit(context, request);
  if (grpc::Status s = Authorize(context, request, "GetCommitPoint"); !s.ok()) return s;
  wal::CommitPoints p = tracker_->Current();
  response->set_commit_point_ms(p.global_ms);
  for (const auto& [topic, ms] : p.topics_ms) {
    auto* t = response->add_topics();
    t->set_topic(topic);
    t->set_commit_point_ms(ms);
  }
  response->set_now_ms(clock_->NowMillis());
  return grpc::Status::OK;
}

grpc::Status AdminService::GetWalStats(grpc::ServerContext* context,
                                       const kspool::v1::GetWalStatsRequest* request,
                                       kspool::v1::GetWalStatsResponse* response) {
  Credit(context, request);
  if (grpc::Status s = Authorize(context, request, "GetWalStats"); !s.ok()) return s;
  wal::Stats s = wal_->GetStats();
  response->set_entries(s.entries);
  response->set_bytes(s.bytes);
  response->set_next_sequence(s.next_seq);
  response->set_oldest_sequence(s.oldest_seq.value_or(0));
  response->set_agent_id(s.agent_id);
  response->set_inflight_messages(drain_->inflight());
  response->set_group_commits(s.group_commits);
  response->set_appended_messages(s.appended_messages);
  uint64_t delivered = 0;
  for (const auto& [topic, ts] : s.topics) delivered += ts.delivered.count;
  response->set_delivered(delivered);
  for (const auto& [topic, ts] : s.topics) {
    auto* t = response->add_topics();
    t->set_topic(topic);
    t->set_entries(ts.pending().count);
    t->set_bytes(ts.pending().bytes);
    t->set_accepted(ts.accepted.count);
    t->set_delivered(ts.delivered.count);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetDiscardReport(grpc::ServerContext* context,
                                            const kspool::v1::GetDiscardReportRequest* request,
                                            kspool::v1::GetDiscardReportResponse* response) {
  Credit(context, request);
  if (grpc::Status s = Authorize(context, request, "GetDiscardReport"); !s.ok()) return s;
  *response = ReportToProto(wal_->GetReport(), clock_->NowMillis());
  if (bruce_) bruce_->AddTo(response);
  return grpc::Status::OK;
}

}  // namespace kspool::agent
