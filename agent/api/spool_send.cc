// SpoolService: Send, and the path every Send request takes (unary or on a stream):
// receive, validate, append; with WAIT_FOR_KAFKA, then wait in DeliveryWaiters.
#include <google/protobuf/arena.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_set>

#include "agent/api/spool_service.h"
#include "agent/security/peer_identity.h"
#include "base/memory_trim.h"

namespace kspool::agent {
namespace {

// Blocks sized for the request: a typical one parses into a single block (its bytes,
// plus the messages' and strings' objects).
google::protobuf::ArenaOptions ArenaFor(size_t request_bytes) {
  google::protobuf::ArenaOptions o;
  o.start_block_size = std::clamp<size_t>(2 * request_bytes + 4096, 4096, 1 << 20);
  o.max_block_size = o.start_block_size;
  return o;
}

// A unary Send. Its own reactor (not the default one) so that a client that goes away
// while its Send waits for Kafka releases the waiter at once.
class SendCall final : public grpc::ServerUnaryReactor {
 public:
  explicit SendCall(DeliveryWaiters* waiters) : waiters_(waiters) {}
  void OnCancel() override {
    if (DeliveryWaiters::Id id = waiter.load()) waiters_->Cancel(id);
  }
  void OnDone() override { delete this; }
  // gRPC runs an inlineable reactor's OnDone/OnCancel on the thread that completes the
  // call instead of handing them to its executor: one thread wake-up less per Send
  // (gRPC batched CPU per message x0.94, 0.88-0.96, docs/PERFORMANCE.md). Inline
  // reactions must be trivial: OnDone only deletes, and OnCancel does nothing while no
  // waiter is assigned. A WAIT_FOR_KAFKA Send's OnCancel releases its waiter and answers
  // the call, so it keeps the executor. gRPC asks at each reaction; OnDone cannot come
  // before Send() returns (the handler holds the call), so `waiter` is set by then.
  bool InternalInlineable() override { return waiter.load() == 0; }
  std::atomic<DeliveryWaiters::Id> waiter{0};
  // What the answer holds, charged until it is written (SendResult::held).
  RequestMemoryBudget::Lease answer;

 private:
  DeliveryWaiters* const waiters_;
};

// How long a WAIT_FOR_KAFKA request may wait: until the client's deadline less a margin
// for the answer to reach it (a tenth of the time, at least 5 ms, at most 200 ms).
// 0: no deadline.
int64_t WaitDeadline(const grpc::CallbackServerContext& context, Clock* clock) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return 0;
  const int64_t remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
                                deadline - std::chrono::system_clock::now())
                                .count();
  if (remaining > int64_t{1} << 50) return 0;  // gRPC's "infinite" in another form
  const int64_t margin = std::clamp<int64_t>(remaining / 10, 5, 200);
  return clock->MonotonicMillis() + std::max<int64_t>(remaining - margin, 0) + 1;
}

}  // namespace

void ToProto(const wal::Outcome& d, kspool::v1::DeliveryStatus* out) {
  using State = kspool::v1::DeliveryStatus;
  out->set_sequence(d.seq);
  switch (d.state) {
    case wal::Outcome::State::kUnknown:
      out->set_state(State::STATE_UNKNOWN);
      break;
    case wal::Outcome::State::kPending:
      out->set_state(State::PENDING);
      break;
    case wal::Outcome::State::kDelivered:
      out->set_state(State::DELIVERED);
      break;
    case wal::Outcome::State::kDiscarded:
      out->set_state(State::DISCARDED);
      break;
  }
  out->set_topic(d.topic);
  out->set_partition(d.state == wal::Outcome::State::kDelivered ? d.partition : -1);
  out->set_offset(d.state == wal::Outcome::State::kDelivered ? d.offset : -1);
  out->set_delivered_time_ms(d.time_ms);
  // Set only when there is text: an empty string set is one more heap object per message.
  if (!d.discard_reason.empty()) out->set_discard_reason(d.discard_reason);
  if (!d.error.empty()) out->set_error(d.error);
}

grpc::Status SerializeAnswer(SpoolService::SendResult* r, grpc::ByteBuffer* out) {
  const grpc::Status s = Reply(r->reply, out);
  r->held.Resize(s.ok() ? out->Length() : 0);
  // The reply object, several times its serialized size, goes with the result: with
  // thousands of deliveries a large release, which the periodic trim gives back (its
  // objects counted, not their strings: a trigger, not an account).
  if (const int n = r->reply.deliveries_size(); n > 0) {
    NoteLargeRelease(sizeof(kspool::v1::DeliveryStatus) * static_cast<uint64_t>(n));
  }
  return s;
}

void FinishSend(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                SpoolService::SendResult result, grpc::ByteBuffer* response,
                RequestMemoryBudget::Lease* answer) {
  if (result.retry_after_ms >= 0) {
    context->AddTrailingMetadata("retry-after-ms", std::to_string(result.retry_after_ms));
  }
  if (!result.sequences.empty()) context->AddTrailingMetadata("kspool-sequences", result.sequences);
  if (result.status.ok()) result.status = SerializeAnswer(&result, response);
  *answer = std::move(result.held);  // until the call is done: gRPC writes it first
  reactor->Finish(result.status);
}

// A WAIT_FOR_KAFKA request between its append and its answer. `first` and
// `receive_time_ms` are written before the waiter is assigned and read only by its
// callback for outcomes that come after that (OK, DEADLINE_EXCEEDED).
struct SpoolService::KafkaWait {
  std::atomic<bool> finished{false};
  SendDone done;
  size_t n = 0;
  uint64_t first = 0;
  int64_t receive_time_ms = 0;
  int64_t deadline_mono_ms = 0;
  DeliveryWaiters::Id id = 0;
  RequestMemoryBudget::Lease held;  // the waiter's state, charged to --max-waiting-memory

  void Complete(SendResult r) {
    if (finished.exchange(true)) return;
    NoteLargeRelease(held.bytes());
    // The waiter is gone (answered, expired, cancelled or never queued); its answer
    // keeps the charge until it is written, resized once serialized (SerializeAnswer).
    r.held = std::move(held);
    std::move(done)(std::move(r));
  }
};

uint64_t SpoolService::AnswerEstimateBytes(size_t n, size_t topic_bytes) {
  // Checked against real answers by SendAnswerBytes.TheEstimateCoversAnAnswer.
  return 64 + n * kAnswerBytesPerMessage + topic_bytes;
}

grpc::ServerUnaryReactor* SpoolService::Send(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) {
  auto* call = new SendCall(waiters_);
  const auto start = std::chrono::steady_clock::now();
  call->waiter = StartSend(
      context, *request, Identities(*context),
      [this, context, call, response, start](SendResult r) {
        if (metrics_) {
          metrics_->ObserveSend(
              r.status.error_code(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          if (!r.status.ok()) metrics_->SendRejected(r.status.error_code());
        }
        FinishSend(context, call, std::move(r), response, &call->answer);
      });
  return call;
}

std::vector<std::string> SpoolService::Identities(
    const grpc::CallbackServerContext& context) const {
  if (access_ == nullptr) return {};
  return PeerIdentities(context);
}

DeliveryWaiters::Id SpoolService::StartSend(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer& request,
                                            const std::vector<std::string>& identities,
                                            SendDone done, uint64_t* reply_estimate) {
  if (reply_estimate) *reply_estimate = 0;
  // `retry_after_ms` -1: the agent's own hint for the code; -2: none (it would not help).
  auto refuse = [this, &done](const absl::Status& s, int64_t retry_after_ms = -1) {
    SendResult r;
    r.status = ToGrpc(s);
    if (retry_after_ms != -2 && (s.code() == absl::StatusCode::kResourceExhausted ||
                                 s.code() == absl::StatusCode::kUnavailable)) {
      r.retry_after_ms = retry_after_ms >= 0 ? retry_after_ms : retry_after_ms_(s.code());
    }
    std::move(done)(std::move(r));
  };
  wal::AppendBatch batch;
  absl::StatusOr<RequestMemoryBudget::Lease> lease;
  bool wait_for_kafka = false;
  RequestMemoryBudget::Lease waiting;  // WAIT_FOR_KAFKA: the waiter's state, until answered
  {
    // Parsed into an arena: a request's messages and their strings are a few bump
    // allocations instead of three heap allocations per message; all freed at once
    // when the arena goes, once the messages are encoded into `batch`.
    google::protobuf::Arena arena(ArenaFor(request.Length()));
    auto& parsed = *google::protobuf::Arena::CreateMessage<kspool::v1::wire::SendRequest>(&arena);
    lease = Receive(context, request, &parsed, "kspool.v1.SendRequest");
    absl::Status valid = lease.status();
    std::optional<AccessControl::Caller> caller;
    if (valid.ok() && access_ != nullptr) {  // the cheapest refusal first
      caller = access_->For(identities);
      valid = access_->CheckTopics(
          *caller, static_cast<size_t>(parsed.messages_size()),
          [&parsed](size_t i) {
            return std::string_view(parsed.messages(static_cast<int>(i)).topic());
          },
          "message");
    }
    if (valid.ok()) valid = ValidateSendRequest(parsed, limits_, clock_->NowMillis());
    if (!valid.ok()) {
      refuse(valid);
      return 0;
    }
    wait_for_kafka = parsed.wait_for() == kspool::v1::wire::WAIT_FOR_KAFKA;
    if (wait_for_kafka) {
      bool retry = false;
      uint64_t estimate = 0;
      absl::StatusOr<RequestMemoryBudget::Lease> held = ChargeWait(parsed, &retry, &estimate);
      if (!held.ok()) {
        refuse(held.status(), retry ? -1 : -2);
        return 0;
      }
      waiting = std::move(*held);
      if (reply_estimate) *reply_estimate = estimate;
    }
    if (caller) {  // charged only for a request that is about to be appended
      int64_t retry_after_ms = -1;
      valid = access_->ChargeQuota(*caller, static_cast<uint64_t>(parsed.messages_size()),
                                   request.Length(), &retry_after_ms);
      if (!valid.ok()) {
        refuse(valid, retry_after_ms);
        return 0;
      }
    }
    for (const kspool::v1::wire::Message& m : parsed.messages()) batch.Add(ViewOf(m));
  }
  if (wait_for_kafka) {
    // A waiting Send's call, and with it gRPC's buffer of the request, lives until it is
    // answered, perhaps through a long outage: the batch has all it needs, so the
    // received bytes go now (gRPC owns the buffer, not const; nothing reads it again).
    const_cast<grpc::ByteBuffer&>(request).Clear();
  }
  const size_t n = batch.size();
  if (!wait_for_kafka) {
    Append(std::move(batch), std::move(*lease),
           [this, n, done = std::move(done)](absl::StatusOr<wal::AppendResult> r) mutable {
             SendResult result;
             if (!r.ok()) {
               result = AppendFailed(r.status(), n);
             } else {
               result.reply.mutable_sequence()->Reserve(static_cast<int>(n));
               for (size_t i = 0; i < n; ++i) result.reply.add_sequence(r->first_seq + i);
               result.reply.set_receive_time_ms(r->receive_time_ms);
             }
             std::move(done)(std::move(result));
           });
    return 0;
  }
  auto wait = std::make_shared<KafkaWait>();
  wait->held = std::move(waiting);
  wait->done = std::move(done);
  wait->n = n;
  wait->deadline_mono_ms = WaitDeadline(*context, clock_);
  wait->id = waiters_->Reserve([wait](absl::Status s, std::vector<wal::Outcome> got) {
    SendResult result;
    result.status = ToGrpc(s);
    const std::string range =
        std::to_string(wait->first) + ".." + std::to_string(wait->first + wait->n - 1);
    if (s.ok()) {
      for (size_t i = 0; i < wait->n; ++i) result.reply.add_sequence(wait->first + i);
      result.reply.set_receive_time_ms(wait->receive_time_ms);
      for (const wal::Outcome& d : got) ToProto(d, result.reply.add_deliveries());
    } else if (absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s)) {
      // Assigned, so durable: say which sequence numbers to ask about later.
      result.status = grpc::Status(
          result.status.error_code(),
          std::string(absl::IsUnavailable(s) ? "the agent is stopping" : "the deadline is near") +
              "; the messages are durable (sequences " + range +
              ") but not all have an outcome yet: ask GetDeliveryStatus");
      result.sequences = range;
      for (size_t i = 0; i < wait->n; ++i) result.reply.add_sequence(wait->first + i);
    }
    wait->Complete(std::move(result));
  });
  Append(std::move(batch), std::move(*lease), [this, wait](absl::StatusOr<wal::AppendResult> r) {
    if (!r.ok()) {
      waiters_->Abandon(wait->id);
      wait->Complete(AppendFailed(r.status(), wait->n));
      return;
    }
    AwaitOutcomes(wait, *r);
  });
  return wait->id;
}

SpoolService::SendResult SpoolService::AppendFailed(const absl::Status& s, size_t n) const {
  SendResult result;
  result.status = ToGrpc(s);
  result.retry_after_ms = retry_after_ms_(s.code());
  if (std::optional<uint64_t> first = wal::AppendInDoubtSeq(s); first && n > 0) {
    // The write reached the WAL and only its sync failed: RocksDB may keep it, and then
    // it is delivered. Named, so that a client asks before it sends the messages again.
    const std::string range = std::to_string(*first) + ".." + std::to_string(*first + n - 1);
    result.status = grpc::Status(
        result.status.error_code(),
        result.status.error_message() + "; the write reached the WAL and may have been kept: "
                                        "sequences " + range +
            " (ask GetDeliveryStatus once the agent accepts Sends again before sending them "
            "again)");
    result.sequences = range;
  }
  return result;
}

absl::StatusOr<RequestMemoryBudget::Lease> SpoolService::ChargeWait(
    const kspool::v1::wire::SendRequest& parsed, bool* retry, uint64_t* reply_estimate) {
  std::unordered_set<std::string_view> topics;  // distinct
  size_t topic_bytes = 0;
  size_t answer_topic_bytes = 0;  // each message's name, as its answer repeats it
  std::string_view last;
  for (const kspool::v1::wire::Message& m : parsed.messages()) {
    answer_topic_bytes += m.topic().size();
    if (!topics.empty() && last == m.topic()) continue;
    last = m.topic();
    if (topics.insert(last).second) topic_bytes += last.size();
  }
  const size_t n = static_cast<size_t>(parsed.messages_size());
  *reply_estimate = AnswerEstimateBytes(n, answer_topic_bytes);
  const uint64_t need = DeliveryWaiters::HeldBytes(n, topics.size(), topic_bytes) + *reply_estimate;
  const std::string what = "WAIT_FOR_KAFKA: waiting for the outcomes of " + std::to_string(n) +
                           " messages and answering them needs " + std::to_string(need) +
                           " bytes";
  if (waiting_budget_.bound() != 0 && need > waiting_budget_.bound()) {
    return absl::ResourceExhaustedError(what + ", more than --max-waiting-memory " +
                                        std::to_string(waiting_budget_.bound()) +
                                        " can ever hold: send fewer messages per request, or "
                                        "WAIT_FOR_WAL and ask GetDeliveryStatus");
  }
  absl::StatusOr<RequestMemoryBudget::Lease> lease = waiting_budget_.Charge(need);
  if (!lease.ok()) {
    *retry = true;  // fits once waiting Sends have been answered
    WarnRefused(what + ": " + std::string(lease.status().message()));
    return absl::ResourceExhaustedError(
        what + ": " + std::string(lease.status().message()) +
        " (--max-waiting-memory); retry later, or WAIT_FOR_WAL and ask GetDeliveryStatus");
  }
  return lease;
}

void SpoolService::AwaitOutcomes(std::shared_ptr<KafkaWait> wait, const wal::AppendResult& r) {
  wait->first = r.first_seq;
  wait->receive_time_ms = r.receive_time_ms;
  waiters_->Assign(wait->id, r.first_seq, wait->n, wait->deadline_mono_ms);
}

}  // namespace kspool::agent
