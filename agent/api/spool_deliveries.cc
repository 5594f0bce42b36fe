// SpoolService: GetDeliveryStatus and WatchDeliveries, both answered from the WAL's
// delivery index.
#include <deque>

#include "agent/security/peer_identity.h"
#include "agent/api/spool_service.h"

namespace kspool::agent {
namespace {

using kspool::v1::DeliveryStatus;

constexpr char kUnknownToCaller[] =
    "not known to this caller: older than the delivery index keeps, not assigned yet, never "
    "a message, or on a topic it may not send to";

// One WatchDeliveries call. The feed hands it batches; it writes them one message at a
// time (gRPC's flow control: the next write starts when the last one is taken) and asks
// the feed for more when the batch is written. It is also the feed's sink: the sink side
// lives on (shared with the feed) until both the call is done and the feed let go.
class WatchCall final : public grpc::ServerWriteReactor<DeliveryStatus>,
                        public DeliveryFeed::Sink,
                        public std::enable_shared_from_this<WatchCall> {
 public:
  WatchCall(DeliveryFeed* feed) : feed_(feed) {}
  // With --acl: re-checks the caller at each reload (SpoolService::WatchDeliveries).
  void set_acl_check(AccessControl::Subscription s) { acl_check_ = std::move(s); }

  void Begin(uint64_t from, std::shared_ptr<WatchCall> self) {
    self_ = std::move(self);                                   // released at OnDone
    const uint64_t id = feed_->Add(from, shared_from_this());  // may call Deliver or End
    MutexLock l(&mu_);
    id_ = id;
    if (ready_before_id_) feed_->Ready(id_);
  }

  void Deliver(std::vector<wal::Outcome> batch) override {
    MutexLock l(&mu_);
    if (finished_) return;
    for (wal::Outcome& d : batch) queue_.push_back(std::move(d));
    WriteNextLocked();
  }
  void End(absl::Status status) override {
    MutexLock l(&mu_);
    if (absl::IsOutOfRange(status)) {
      end_ = grpc::Status(grpc::StatusCode::OUT_OF_RANGE, std::string(status.message()));
    } else {
      end_ = ToGrpc(status);
    }
    ending_ = true;
    if (!writing_) FinishLocked();
  }

  void OnWriteDone(bool ok) override {
    MutexLock l(&mu_);
    writing_ = false;
    if (!ok) {  // the client is gone
      queue_.clear();
      end_ = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      ending_ = true;
    }
    if (ending_) return FinishLocked();
    if (!queue_.empty()) return WriteNextLocked();
    if (id_ == 0) {
      ready_before_id_ = true;  // Begin passes it on
    } else {
      feed_->Ready(id_);
    }
  }
  void OnCancel() override {
    MutexLock l(&mu_);
    queue_.clear();
    end_ = grpc::Status::CANCELLED;
    ending_ = true;
    if (!writing_) FinishLocked();
  }
  void OnDone() override {
    uint64_t id;
    {
      MutexLock l(&mu_);
      id = id_;
    }
    feed_->Remove(id);
    self_.reset();  // may destroy this
  }

 private:
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || queue_.empty() || ending_) return;
    current_.Clear();
    ToProto(queue_.front(), &current_);
    queue_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }
  void FinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(end_);
  }

  DeliveryFeed* const feed_;
  AccessControl::Subscription acl_check_;  // set before Begin
  std::shared_ptr<WatchCall> self_;
  Mutex mu_;
  uint64_t id_ ABSL_GUARDED_BY(mu_) = 0;
  bool ready_before_id_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<wal::Outcome> queue_ ABSL_GUARDED_BY(mu_);
  DeliveryStatus current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status end_ ABSL_GUARDED_BY(mu_);
};

// A WatchDeliveries call refused before it starts.
class RefusedWatch final : public grpc::ServerWriteReactor<DeliveryStatus> {
 public:
  explicit RefusedWatch(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// What a caller without the admin right is told of `d`: nothing of a topic it may not
// send to, PENDING included (a live entry whose topic cannot be read counts as such),
// and no unknown's reason, whose numbers (the next sequence number, the index's floor)
// tell the agent's traffic and would tell a hidden outcome from a forgotten one.
wal::Outcome SeenBy(const AccessControl::Caller& caller, const wal::Outcome& d) {
  const bool unknown = d.state == wal::Outcome::State::kUnknown;
  if (!unknown && caller.Allows(d.topic)) return d;
  wal::Outcome hidden;
  hidden.seq = d.seq;
  hidden.error = d.seq == 0 ? d.error : kUnknownToCaller;
  return hidden;
}

}  // namespace

grpc::ServerUnaryReactor* SpoolService::GetDeliveryStatus(
    grpc::CallbackServerContext* context, const kspool::v1::GetDeliveryStatusRequest* request,
    kspool::v1::GetDeliveryStatusResponse* response) {
  if (on_received_) on_received_(context->peer(), request->ByteSizeLong());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (request->sequences_size() > kMaxStatusQuery) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "sequences: " + std::to_string(request->sequences_size()) +
                                     " asked for, at most " + std::to_string(kMaxStatusQuery)));
    return reactor;
  }
  // One source: the WAL's delivery index. A WAIT_FOR_KAFKA call is answered once its
  // outcomes are settled there, so a status never goes back from what a call was told
  // (but after a settle that failed: the status stays PENDING until one succeeds).
  const std::vector<uint64_t> seqs(request->sequences().begin(), request->sequences().end());
  std::vector<wal::Outcome> found;
  found.reserve(seqs.size());
  absl::Status s = deliveries_->LookupDeliveries(seqs, &found);
  if (!s.ok()) {
    reactor->Finish(ToGrpc(s));
    return reactor;
  }
  // With --acl, a caller learns outcomes only of topics it may send to (admin: all);
  // others read as unknown, like forgotten ones.
  std::optional<AccessControl::Caller> caller;
  if (access_ != nullptr) {
    caller = access_->For(PeerIdentities(*context));
    if (caller->admin()) caller.reset();
  }
  response->mutable_statuses()->Reserve(static_cast<int>(found.size()));
  for (const wal::Outcome& d : found) {
    if (caller) {
      ToProto(SeenBy(*caller, d), response->add_statuses());
      continue;
    }
    ToProto(d, response->add_statuses());
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerWriteReactor<DeliveryStatus>* SpoolService::WatchDeliveries(
    grpc::CallbackServerContext* context, const kspool::v1::WatchDeliveriesRequest* request) {
  if (on_received_) on_received_(context->peer(), request->ByteSizeLong());
  auto call = std::make_shared<WatchCall>(feed_);
  WatchCall* raw = call.get();
  if (access_ != nullptr) {  // every topic's outcomes: the admin right, while it lasts
    std::vector<std::string> identities = PeerIdentities(*context);
    // Subscribed before the check, so that no reload falls between them unseen. A
    // reload that takes the right away ends the stream (a write under way completes).
    raw->set_acl_check(access_->OnReload(
        [access = access_, identities, weak = std::weak_ptr<WatchCall>(call)] {
          std::shared_ptr<WatchCall> c = weak.lock();
          if (c == nullptr) return;
          absl::Status s = access->CheckAdmin(access->For(identities), "WatchDeliveries");
          if (!s.ok()) {
            c->End(absl::PermissionDeniedError(std::string(s.message()) +
                                               ": the rules changed while the stream was open"));
          }
        }));
    if (absl::Status s = access_->CheckAdmin(access_->For(std::move(identities)),
                                             "WatchDeliveries");
        !s.ok()) {
      return new RefusedWatch(ToGrpc(s));
    }
  }
  raw->Begin(request->from_sequence(), std::move(call));
  return raw;
}

}  // namespace kspool::agent
