// SpoolService: the kspool.v1.Spool gRPC service. Send validates the whole request,
// appends it to the WAL as one atomic batch, and answers OK only once it is fsynced.
// Status codes: INVALID_ARGUMENT (bad input, including a request that does not parse or
// has invalid UTF-8: the message names the message index and field), RESOURCE_EXHAUSTED
// (WAL full, the receive memory budget full, also with a Broadcast's copies, or the
// waiting memory full for a WAIT_FOR_KAFKA Send), UNAVAILABLE (WAL I/O error or full
// disk). The last two carry the trailing metadata `retry-after-ms`, a hint when to try
// again.
// Send, SendStream and Broadcast are raw callback methods: requests arrive as bytes and
// are parsed here into the wire mirror (proto/kspool/v1/spool_wire.proto), so that a
// malformed request gets a precise INVALID_ARGUMENT instead of gRPC's empty error. No
// thread waits for the fsync: the WAL's committer thread finishes the call, so one
// group commit can answer any number of Sends. A WAIT_FOR_KAFKA Send then waits in
// DeliveryWaiters, completed by the drain loop (spool_send.cc); SendStream pipelines
// Sends on one stream (spool_stream.cc); GetDeliveryStatus and WatchDeliveries read the
// WAL's delivery index (spool_deliveries.cc, DeliveryFeed). Broadcast, rare and waiting
// for Kafka metadata, runs on a thread of its own (at most kMaxBroadcasts at once).
// Thread safety: gRPC calls every method from many threads.
#pragma once

#include <functional>

#include "absl/functional/any_invocable.h"
#include "agent/security/access_control.h"
#include "agent/delivery/delivery_feed.h"
#include "agent/delivery/delivery_waiters.h"
#include "agent/kafka/kafka_metadata.h"
#include "base/log_rate_limiter.h"
#include "agent/stats/metrics.h"
#include "agent/api/request_memory_budget.h"
#include "agent/validate/request_validator.h"
#include "kspool/v1/spool.grpc.pb.h"
#include "kspool/v1/spool_wire.pb.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "wal/append_log.h"
#include "wal/delivery_queries.h"
#include "wal/outcome.h"

namespace kspool::agent {

using SpoolServiceBase = kspool::v1::Spool::WithRawCallbackMethod_Send<
    kspool::v1::Spool::WithRawCallbackMethod_Broadcast<
        kspool::v1::Spool::WithRawCallbackMethod_SendStream<
            kspool::v1::Spool::WithCallbackMethod_GetDeliveryStatus<
                kspool::v1::Spool::WithCallbackMethod_WatchDeliveries<
                    kspool::v1::Spool::Service>>>>>;

class SpoolService final : public SpoolServiceBase {
 public:
  static constexpr int kMaxBroadcasts = 16;
  // Requests of one SendStream worked on at once; the stream is not read further
  // meanwhile, so HTTP/2 flow control holds the client back.
  static constexpr size_t kMaxStreamInflight = 64;
  static constexpr int kMaxStatusQuery = 10000;  // sequences per GetDeliveryStatus

  // One Send request's answer: the unary Send's, or one SendStream response.
  struct SendResult {
    grpc::Status status;
    kspool::v1::SendResponse reply;  // when status is OK
    int64_t retry_after_ms = -1;     // RESOURCE_EXHAUSTED, UNAVAILABLE: when to try again
    std::string sequences;           // "first..last" when durable but not answered in time
    // WAIT_FOR_KAFKA: what the answer holds (its serialized size), charged to
    // --max-waiting-memory until it is written to the client (a client that does not read
    // its answers holds back its own waiting Sends, then everyone's, never memory).
    RequestMemoryBudget::Lease held;
  };
  // An answer is serialized as soon as it is complete (SerializeAnswer: the reply
  // object, several times larger, goes at once): until written, it holds its bytes.
  // The estimate charged before a WAIT_FOR_KAFKA request of `n` messages, whose topic
  // names have `topic_bytes` in all (a name counted once per message), is taken: at
  // least its answer's serialized size, but for discards' texts (charged when they come).
  static uint64_t AnswerEstimateBytes(size_t n, size_t topic_bytes);
  // Serialized bytes per delivered message, besides its topic name: sequence numbers
  // (twice), state, partition, offset, time and the fields' tags and lengths, at most.
  static constexpr size_t kAnswerBytesPerMessage = 64;
  // Answers of one SendStream held, complete or on their way (the WAIT_FOR_KAFKA ones
  // at their estimate until complete): past this the stream is not read, so a client that
  // does not read its answers holds back only itself.
  static constexpr uint64_t kMaxStreamReplyBytes = 4 << 20;
  using SendDone = absl::AnyInvocable<void(SendResult) &&>;
  // The answer to a Send whose append failed; one in doubt (wal::AppendInDoubtSeq: its
  // sync failed, RocksDB may keep it) names its `n` sequence numbers, in the message and
  // in `sequences` (trailing metadata kspool-sequences).
  SendResult AppendFailed(const absl::Status& s, size_t n) const;

  // `retry_after_ms` answers, for a rejected Send's status code, how long to wait.
  // `clock`: the wall clock that client timestamps are checked against.
  // `receive_memory_bytes`: the bound of the request memory budget (0 = none).
  // `waiting_memory_bytes`: the bound on what waiting WAIT_FOR_KAFKA Sends hold
  // (--max-waiting-memory; 0 = none).
  // `wal`: appends, and the topics seen (Broadcast); `deliveries`: GetDeliveryStatus.
  SpoolService(wal::AppendLog* wal, wal::DeliveryQueries* deliveries, RequestLimits limits,
               std::function<void()> on_appended,
               std::function<int64_t(absl::StatusCode)> retry_after_ms, Metrics* metrics,
               KafkaMetadata* metadata, Clock* clock, uint64_t receive_memory_bytes,
               DeliveryWaiters* waiters, DeliveryFeed* feed, uint64_t waiting_memory_bytes = 0);
  // Waits for the last Broadcast thread to let go of this service.
  ~SpoolService() override;

  grpc::ServerUnaryReactor* Send(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Broadcast(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SendStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetDeliveryStatus(
      grpc::CallbackServerContext* context, const kspool::v1::GetDeliveryStatusRequest* request,
      kspool::v1::GetDeliveryStatusResponse* response) override;
  grpc::ServerWriteReactor<kspool::v1::DeliveryStatus>* WatchDeliveries(
      grpc::CallbackServerContext* context,
      const kspool::v1::WatchDeliveriesRequest* request) override;

  // Receives, validates and appends one Send request and, with WAIT_FOR_KAFKA, waits
  // for its outcomes until `context`'s deadline (less a margin, so that the answer
  // reaches the client in time). `done` runs exactly once, on whichever thread
  // completes the request. Returns the waiter to cancel if the client goes away (0: none).
  // `identities`: the caller's (Identities(context)), checked against the --acl rules.
  // With WAIT_FOR_KAFKA, `request` is cleared once parsed (its call may live long).
  // `reply_estimate` (optional): set to AnswerEstimateBytes of an accepted WAIT_FOR_KAFKA
  // request, 0 otherwise.
  DeliveryWaiters::Id StartSend(grpc::CallbackServerContext* context,
                                const grpc::ByteBuffer& request,
                                const std::vector<std::string>& identities, SendDone done,
                                uint64_t* reply_estimate = nullptr);
  // The caller's identities (agent/security/peer_identity.h) with --acl, else none (not needed).
  std::vector<std::string> Identities(const grpc::CallbackServerContext& context) const;
  DeliveryWaiters* waiters() const { return waiters_; }
  // A SendStream stopped reading because `bytes` of its answers are not written yet (its
  // client reads them slowly or not at all): a warning and
  // kspool_degraded_events_total{event="stream_answers_unread"}, once per stall.
  void AnswersUnread(uint64_t bytes);

  // Parsed requests held now, and the bound (for metrics and /status).
  const RequestMemoryBudget& receive_memory() const { return budget_; }
  // What waiting WAIT_FOR_KAFKA Sends hold, and the bound.
  const RequestMemoryBudget& waiting_memory() const { return waiting_budget_; }

  // With --acl: Send, SendStream and Broadcast need the send right on their topics and
  // are charged to quotas; WatchDeliveries needs the admin right; GetDeliveryStatus
  // answers UNKNOWN for topics the caller may not send to (unless admin). Set before
  // serving; must outlive this.
  void set_access_control(AccessControl* access) { access_ = access; }

  // Told of every request received in full, by every method (Send, each SendStream
  // request, Broadcast, GetDeliveryStatus, WatchDeliveries): its gRPC peer and serialized
  // size (the front door's ReceptionMeter). Set before serving.
  void set_on_received(std::function<void(const std::string& peer, size_t bytes)> f) {
    on_received_ = std::move(f);
  }

  // Test seam (the agent never sets it): moments in a SendStream call's life, told to
  // `hook` on the thread where they happen, with the call's address. kCancelled: OnCancel
  // has marked the call cancelled; kCompleting: a request's completion is about to take
  // the call's lock; kFinished: the call's Finish() was issued, its lock still held (the
  // window in which gRPC may run OnDone on another thread); kDone: OnDone runs;
  // kDestroyed: the call is being destroyed. A hook may block to widen a window. Set
  // before serving.
  enum class StreamEvent { kCancelled, kCompleting, kFinished, kDone, kDestroyed };
  void set_stream_hook_for_test(std::function<void(StreamEvent, const void* call)> hook) {
    stream_hook_ = std::move(hook);
  }
  void StreamHook(StreamEvent e, const void* call) const {
    if (stream_hook_) stream_hook_(e, call);
  }

 private:
  struct BroadcastCall;
  struct KafkaWait;
  using Appended = absl::AnyInvocable<void(absl::StatusOr<wal::AppendResult>) &&>;

  // Charges `request` to the budget and parses it into `out`; on failure the error
  // (RESOURCE_EXHAUSTED, or INVALID_ARGUMENT) is returned.
  absl::StatusOr<RequestMemoryBudget::Lease> Receive(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer& request,
                                                     google::protobuf::MessageLite* out,
                                                     const char* public_type);
  // Appends `batch`; `lease` is held until the append completes. `done` runs at once
  // when the WAL refuses the batch, else on the committer thread; a refusal has already
  // been logged.
  void Append(wal::AppendBatch batch, RequestMemoryBudget::Lease lease, Appended done);
  // Charges what a waiter for `parsed` will hold, and its answer until written
  // (`reply_estimate` of it), to the waiting memory bound, before the request is appended.
  // `retry`: as for ChargeFanOut.
  absl::StatusOr<RequestMemoryBudget::Lease> ChargeWait(
      const kspool::v1::wire::SendRequest& parsed, bool* retry, uint64_t* reply_estimate);
  // After a durable append of a WAIT_FOR_KAFKA request: waits for its outcomes.
  void AwaitOutcomes(std::shared_ptr<KafkaWait> wait, const wal::AppendResult& r);
  // Broadcast's own thread: resolves the targets, then appends.
  void RunBroadcast(std::unique_ptr<BroadcastCall> call);
  // Validates the request and fills call->targets from fresh partition counts.
  absl::Status ResolveBroadcast(BroadcastCall* call);
  // Charges the copies of a resolved Broadcast (one encoded record per target, the
  // first given as `one`) to the receive memory budget, before they are made. `retry`:
  // set when a refusal may succeed later (not when the copies exceed the bound alone).
  absl::StatusOr<RequestMemoryBudget::Lease> ChargeFanOut(const BroadcastCall& call,
                                                          const std::string& one, bool* retry);
  // Frees the call, finishes it, and then lets go of this service.
  void FinishBroadcast(std::unique_ptr<BroadcastCall> call, const grpc::Status& status);
  void SetRetryAfter(grpc::ServerContextBase* context, absl::StatusCode code);
  // Refusals under load come by the thousand: at most 10 lines per 10 s.
  void WarnRefused(const std::string& line);

  wal::AppendLog* const wal_;
  wal::DeliveryQueries* const deliveries_;
  const RequestLimits limits_;
  const std::function<void()> on_appended_;
  const std::function<int64_t(absl::StatusCode)> retry_after_ms_;
  Metrics* const metrics_;
  std::function<void(const std::string& peer, size_t bytes)> on_received_;
  std::function<void(StreamEvent, const void*)> stream_hook_;
  KafkaMetadata* const metadata_;
  Clock* const clock_;
  DeliveryWaiters* const waiters_;
  DeliveryFeed* const feed_;
  RequestMemoryBudget budget_;
  RequestMemoryBudget waiting_budget_;
  AccessControl* access_ = nullptr;
  LogRateLimiter refusal_log_{10, 10'000};

  Mutex mu_;
  CondVar broadcasts_done_;
  int broadcasts_ ABSL_GUARDED_BY(mu_) = 0;
};

// absl and gRPC share their status code numbering.
grpc::Status ToGrpc(const absl::Status& s);

// Finishes a unary call with `result`: its status, reply, and trailing metadata.
void FinishSend(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                SpoolService::SendResult result, grpc::ByteBuffer* response,
                RequestMemoryBudget::Lease* answer);
// Serializes `r`'s reply into `out` (a unary response or a stream's answer) and resizes
// its charge (r->held) to the serialized bytes, what the answer holds until written.
grpc::Status SerializeAnswer(SpoolService::SendResult* r, grpc::ByteBuffer* out);

// The one converter of an outcome to its public form.
void ToProto(const wal::Outcome& d, kspool::v1::DeliveryStatus* out);

// Serializes `reply` into a call's response buffer.
template <typename M>
grpc::Status Reply(const M& reply, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  return grpc::SerializationTraits<M>::Serialize(reply, out, &own_buffer);
}

// A record view of wire message `m` (pointing into it) for an AppendBatch.
wal::RecordView ViewOf(const kspool::v1::wire::Message& m);

}  // namespace kspool::agent
