// SpoolService::Broadcast: one message to every partition of a list of topics, as one
// atomic batch. Runs on a thread of its own: it waits for fresh Kafka metadata, which
// must not hold up a gRPC thread.
#include <spdlog/spdlog.h>

#include <optional>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "agent/api/spool_service.h"
#include "base/memory_trim.h"

namespace kspool::agent {
namespace {

// Kafka's internal topics (__consumer_offsets, __transaction_state, ...) are never
// broadcast targets unless named.
bool IsInternalTopic(std::string_view topic) { return topic.substr(0, 2) == "__"; }

}  // namespace

struct SpoolService::BroadcastCall {
  grpc::CallbackServerContext* context = nullptr;
  grpc::ServerUnaryReactor* reactor = nullptr;
  grpc::ByteBuffer* response = nullptr;
  RequestMemoryBudget::Lease lease;
  kspool::v1::wire::BroadcastRequest request;
  std::vector<std::pair<std::string_view, int32_t>> targets;  // topics point into `request`
  std::vector<std::string> seen_topics;                       // "every topic" (no list given)
  std::vector<std::string> identities;                        // the caller's, with --acl
  int64_t retry_after_ms = -1;                                // set by a quota refusal
};

grpc::ServerUnaryReactor* SpoolService::Broadcast(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto call = std::make_unique<BroadcastCall>();
  call->context = context;
  call->reactor = reactor;
  call->response = response;
  call->identities = Identities(*context);
  absl::StatusOr<RequestMemoryBudget::Lease> lease =
      Receive(context, *request, &call->request, "kspool.v1.BroadcastRequest");
  if (!lease.ok()) {
    if (absl::IsResourceExhausted(lease.status())) SetRetryAfter(context, lease.status().code());
    reactor->Finish(ToGrpc(lease.status()));
    return reactor;
  }
  call->lease = std::move(*lease);
  {
    MutexLock lock(&mu_);
    if (broadcasts_ >= kMaxBroadcasts) {
      SetRetryAfter(context, absl::StatusCode::kResourceExhausted);
      reactor->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   std::to_string(kMaxBroadcasts) + " broadcasts in progress"));
      return reactor;
    }
    ++broadcasts_;
  }
  BroadcastCall* c = call.release();
  try {
    std::thread([this, c] { RunBroadcast(std::unique_ptr<BroadcastCall>(c)); }).detach();
  } catch (const std::system_error& e) {  // no thread to be had: tell the client
    std::unique_ptr<BroadcastCall> own(c);
    FinishBroadcast(std::move(own), grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                                 std::string("broadcast: no thread: ") + e.what()));
  }
  return reactor;
}

void SpoolService::FinishBroadcast(std::unique_ptr<BroadcastCall> call, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = call->reactor;
  call.reset();  // gives back the request's memory
  reactor->Finish(status);
  MutexLock lock(&mu_);  // the last use of this service by the call
  --broadcasts_;
  broadcasts_done_.SignalAll();
}

void SpoolService::RunBroadcast(std::unique_ptr<BroadcastCall> call) {
  if (absl::Status s = ResolveBroadcast(call.get()); !s.ok()) {
    if (call->retry_after_ms >= 0) {
      call->context->AddTrailingMetadata("retry-after-ms", std::to_string(call->retry_after_ms));
    }
    return FinishBroadcast(std::move(call), ToGrpc(s));
  }
  wal::RecordView v = ViewOf(call->request.message());
  RequestMemoryBudget::Lease copies;
  if (!call->targets.empty()) {
    v.topic = call->targets[0].first;
    v.partition = call->targets[0].second;
    bool retry = false;
    absl::StatusOr<RequestMemoryBudget::Lease> lease =
        ChargeFanOut(*call, wal::EncodeUnsealed(v), &retry);
    if (!lease.ok()) {
      if (retry) SetRetryAfter(call->context, lease.status().code());
      return FinishBroadcast(std::move(call), ToGrpc(lease.status()));
    }
    copies = std::move(*lease);
  }
  wal::AppendBatch batch;
  for (const auto& [topic, partition] : call->targets) {
    v.topic = topic;
    v.partition = partition;
    batch.Add(v);
  }
  BroadcastCall* c = call.release();
  Append(std::move(batch), std::move(c->lease),
         [this, c, copies = std::move(copies)](absl::StatusOr<wal::AppendResult> r) mutable {
           NoteLargeRelease(copies.bytes());  // freed once the group is written
           copies = {};  // the batch is the WAL's now, or gone
           std::unique_ptr<BroadcastCall> own(c);
           if (!r.ok()) {
             SetRetryAfter(own->context, r.status().code());
             return FinishBroadcast(std::move(own), ToGrpc(r.status()));
           }
           kspool::v1::BroadcastResponse reply;
           for (size_t i = 0; i < own->targets.size(); ++i) {
             kspool::v1::BroadcastTarget* t = reply.add_targets();
             t->set_topic(std::string(own->targets[i].first));
             t->set_partition(own->targets[i].second);
             t->set_sequence(r->first_seq + i);
           }
           reply.set_receive_time_ms(r->receive_time_ms);
           grpc::Status status = Reply(reply, own->response);
           FinishBroadcast(std::move(own), status);
         });
}

absl::StatusOr<RequestMemoryBudget::Lease> SpoolService::ChargeFanOut(const BroadcastCall& call,
                                                                      const std::string& one,
                                                                      bool* retry) {
  // Each copy: the record (its topic's name and varints differ from the first's by a
  // few bytes), its string and the batch's bookkeeping.
  constexpr uint64_t kPerCopy = 64;
  const uint64_t first_topic = call.targets[0].first.size();
  uint64_t need = 0;
  for (const auto& [topic, partition] : call.targets) {
    need += one.size() - first_topic + topic.size() + kPerCopy;
  }
  const std::string what = "broadcast: its " + std::to_string(call.targets.size()) +
                           " copies (one per partition) need " + std::to_string(need) + " bytes";
  if (budget_.bound() != 0 && need > budget_.bound()) {
    return absl::ResourceExhaustedError(
        what + ", more than the memory for requests being appended can ever hold (" +
        std::to_string(budget_.bound()) +
        " bytes, a quarter of --max-receive-memory): broadcast to fewer partitions or a "
        "smaller message");
  }
  absl::StatusOr<RequestMemoryBudget::Lease> lease = budget_.Charge(need);
  if (!lease.ok()) {
    *retry = true;  // fits once other requests have been appended
    WarnRefused(what + ": " + std::string(lease.status().message()));
    return absl::ResourceExhaustedError(what + ": " + std::string(lease.status().message()) +
                                        " (--max-receive-memory)");
  }
  return lease;
}

absl::Status SpoolService::ResolveBroadcast(BroadcastCall* call) {
  const kspool::v1::wire::BroadcastRequest& req = call->request;
  if (absl::Status s = ValidateMessageBody(req.message(), limits_, clock_->NowMillis()); !s.ok()) {
    return absl::InvalidArgumentError("message: " + std::string(s.message()));
  }
  // Each topic once, in the order first named.
  std::vector<std::string_view> topics;
  std::unordered_set<std::string_view> seen;
  for (int i = 0; i < req.topics_size(); ++i) {
    if (absl::Status s = ValidateTopicName(req.topics(i)); !s.ok()) {
      return absl::InvalidArgumentError("topics[" + std::to_string(i) + "]: " +
                                        std::string(s.message()));
    }
    if (seen.insert(req.topics(i)).second) topics.push_back(req.topics(i));
  }
  if (req.topics_size() == 0) {
    for (const auto& [topic, stats] : wal_->GetStats().topics) {
      if (!IsInternalTopic(topic)) call->seen_topics.push_back(topic);
    }
    topics.assign(call->seen_topics.begin(), call->seen_topics.end());
    if (topics.empty()) {
      return absl::FailedPreconditionError(
          "broadcast to all topics, but the agent has seen none yet; name them");
    }
  }
  std::optional<AccessControl::Caller> caller;
  if (access_ != nullptr) {  // before any metadata is fetched
    caller = access_->For(call->identities);
    if (absl::Status s = access_->CheckTopics(
            *caller, topics.size(), [&](size_t i) { return topics[i]; }, "topic");
        !s.ok()) {
      return s;
    }
  }
  for (std::string_view topic : topics) {
    if (call->context->IsCancelled()) return absl::CancelledError("broadcast: cancelled");
    absl::StatusOr<int> n = metadata_->PartitionCount(std::string(topic), 5000);
    if (!n.ok()) {
      const std::string what = "broadcast: " + std::string(n.status().message());
      return absl::IsNotFound(n.status()) ? absl::NotFoundError(what) : absl::UnavailableError(what);
    }
    if (call->targets.size() + *n > limits_.max_batch_messages) {
      return absl::InvalidArgumentError(
          "broadcast makes more copies (one per partition) than --max-batch-messages " +
          std::to_string(limits_.max_batch_messages));
    }
    for (int p = 0; p < *n; ++p) call->targets.emplace_back(topic, p);
  }
  if (caller) {
    const uint64_t copies = call->targets.size();
    return access_->ChargeQuota(*caller, copies,
                                copies * req.message().ByteSizeLong(), &call->retry_after_ms);
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
