#include "agent/background/heartbeater.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

namespace kspool::agent {

Heartbeater::Heartbeater(wal::AppendLog* wal, CommitTracker* tracker, KafkaMetadata* metadata,
                         Metrics* metrics, std::function<void()> on_appended, Clock* clock,
                         HeartbeatOptions options)
    : wal_(wal),
      tracker_(tracker),
      metadata_(metadata),
      metrics_(metrics),
      on_appended_(std::move(on_appended)),
      clock_(clock),
      options_(std::move(options)) {}

Heartbeater::~Heartbeater() { Stop(); }

void Heartbeater::Start() {
  if (options_.interval_ms == 0) return;
  thread_.Start("kspool-heartbt", std::chrono::milliseconds(options_.interval_ms),
                [this] { Beat(); });
}

void Heartbeater::Stop() { thread_.Stop(); }

size_t Heartbeater::Beat() {
  std::vector<std::string> topics = options_.topics;
  // Every topic the WAL tracks, not every topic ever seen: a forgotten one stays so.
  if (topics.empty()) topics = wal_->TrackedTopics();
  const wal::CommitPoints points = tracker_->Current();
  const std::string agent_id = wal_->agent_id();
  size_t appended = 0;
  for (const std::string& topic : topics) {
    absl::StatusOr<int> partitions = metadata_->PartitionCount(topic, 5000);
    if (!partitions.ok()) {
      spdlog::warn("heartbeat: skipping topic {} this round: {}", topic,
                   partitions.status().ToString());
      if (metrics_) metrics_->HeartbeatFailed(topic);
      continue;
    }
    auto tp = points.topics_ms.find(topic);
    const int64_t topic_point = tp == points.topics_ms.end() ? points.global_ms : tp->second;
    const int64_t now = clock_->NowMillis();
    std::vector<std::string> values;
    wal::AppendBatch batch;
    for (int p = 0; p < *partitions; ++p) {
      values.push_back(nlohmann::json{{"type", "kspool.heartbeat"},
                                      {"agent_id", agent_id},
                                      {"commit_point_ms", points.global_ms},
                                      {"topic_commit_point_ms", topic_point},
                                      {"created_ms", now},
                                      {"topic", topic},
                                      {"partition", p}}
                           .dump());
    }
    for (int p = 0; p < *partitions; ++p) {
      wal::RecordView v;
      v.topic = topic;
      v.partition = p;
      v.value = values[p];
      v.headers.emplace_back("kspool.heartbeat", "1");
      batch.Add(v);
    }
    absl::StatusOr<wal::AppendResult> r = wal_->Append(std::move(batch));
    if (!r.ok()) {
      spdlog::warn("heartbeat: cannot append for topic {}: {}", topic, r.status().ToString());
      if (metrics_) metrics_->HeartbeatFailed(topic);
      continue;
    }
    appended += *partitions;
    if (metrics_) metrics_->HeartbeatSent(topic, *partitions);
  }
  if (appended) on_appended_();
  return appended;
}

}  // namespace kspool::agent
