// Agent: the JSON documents of GET /status and GET /discards.
#include <nlohmann/json.hpp>

#include "agent/app/agent.h"
#include "agent/delivery/discard_report.h"

namespace kspool::agent {

std::string Agent::DiscardsJson(AdminService* admin) const {
  kspool::v1::GetDiscardReportResponse report;
  grpc::ServerContext ctx;
  admin->GetDiscardReport(&ctx, nullptr, &report);
  return ReportToJson(report).dump(2) + "\n";
}

std::string Agent::StatusJson(Clock* clock) const {
  const int64_t now = clock->NowMillis();
  wal::Stats st = wal_->GetStats();
  wal::CommitPoints cp = tracker_->Current();
  absl::Status health = wal_->health();
  nlohmann::json j;
  j["version"] = KSPOOL_VERSION;
  j["agent_id"] = agent_id_;
  const int64_t mono = clock->MonotonicMillis();
  j["uptime_seconds"] = (mono - started_mono_ms_) / 1000.0;
  j["wal"] = {{"dir", config_.wal.dir},
              {"entries", st.entries},
              {"bytes", st.bytes},
              {"capacity_bytes", st.capacity_bytes},
              {"next_sequence", st.next_seq},
              {"oldest_sequence", st.oldest_seq.value_or(0)},
              {"healthy", health.ok()},
              {"error", health.ok() ? "" : health.ToString()}};
  j["kafka"] = {{"brokers", config_.kafka_brokers},
                {"brokers_up", drain_->brokers_up()},
                {"inflight_messages", drain_->inflight()},
                {"seconds_since_last_delivery",
                 drain_->last_delivery_mono_ms() == 0
                     ? nlohmann::json(nullptr)
                     : nlohmann::json((mono - drain_->last_delivery_mono_ms()) / 1000.0)},
                {"discarded_since_start", drain_->discarded()},
                {"producers_replaced", drain_->producers_replaced()},
                {"producers_recycled", drain_->producers_recycled()}};
  // Topics (and their partitions without a leader) that hold entries back.
  nlohmann::json stuck = nlohmann::json::array();
  for (const StuckTopic& t : drain_->Stuck()) {
    stuck.push_back({{"topic", t.topic},
                     {"stuck_seconds", t.stuck_seconds},
                     {"waiting_entries", t.waiting_entries},
                     {"leaderless_partitions", t.leaderless_partitions}});
  }
  j["kafka"]["stuck_topics"] = stuck;
  // After a restart: topics whose in-doubt entries wait to be read back from Kafka.
  nlohmann::json reconciling = nlohmann::json::array();
  for (const ReconcilingTopic& t : drain_->Reconciling()) {
    reconciling.push_back({{"topic", t.topic},
                           {"seconds", t.seconds},
                           {"partitions_read", t.released}});
  }
  j["kafka"]["reconciliation"] = {{"in_progress", !reconciling.empty()},
                                  {"topics", reconciling},
                                  {"found_in_kafka", drain_->reconciled_found()}};
  // What clients hold at the front door, against its bounds.
  j["front_door"] = {{"grpc_connections", listener_ ? listener_->connections() : 0},
                     {"grpc_connections_max", listener_ ? listener_->max_connections() : 0},
                     {"receive_memory_bytes",
                      (meter_ ? meter_->debt() : 0) + (spool_ ? spool_->receive_memory().in_use() : 0)},
                     {"receive_memory_limit_bytes", config_.max_receive_memory},
                     {"waiting_memory_bytes", spool_ ? spool_->waiting_memory().in_use() : 0},
                     {"waiting_memory_limit_bytes", config_.max_waiting_memory}};
  j["commit_point"] = {{"global_ms", cp.global_ms}, {"lag_ms", now - cp.global_ms}};
  for (const auto& [topic, ms] : cp.topics_ms) j["commit_point"]["topics"][topic] = ms;
  return j.dump(2) + "\n";
}

}  // namespace kspool::agent
