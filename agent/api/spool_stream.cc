// SpoolService::SendStream: Sends pipelined on one stream. Each request read is started
// at once (StartSend: its append joins the next group commit); answers are written in
// request order as they complete. At most kMaxStreamInflight requests are worked on at
// once, and their answers, complete or on their way, hold at most about
// kMaxStreamReplyBytes: beyond either the stream is not read, so HTTP/2 flow control
// holds the client back and memory grows neither with a fast writer nor with a client
// that does not read its answers (their bytes also stay charged to
// --max-waiting-memory until written: SendResult::held).
// Lifetime: the call owns itself (self_, released at OnDone) and every request in
// flight holds it too. A request completes on the WAL's committer, the drain or the
// waiters' expiry thread, outside any gRPC reaction, and its Finish() lets gRPC run
// OnDone on another thread at once: the request's hold keeps the call (and the mutex
// it is still holding) alive until it has returned.
#include <deque>
#include <memory>

#include "agent/api/spool_service.h"

namespace kspool::agent {
namespace {

class SendStreamCall final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                             public std::enable_shared_from_this<SendStreamCall> {
 public:
  SendStreamCall(SpoolService* service, grpc::CallbackServerContext* context, Metrics* metrics)
      : service_(service),
        context_(context),
        metrics_(metrics),
        identities_(service->Identities(*context)) {}
  ~SendStreamCall() override {
    service_->StreamHook(SpoolService::StreamEvent::kDestroyed, this);
  }

  // Starts reading; `self` (this call) is released at OnDone.
  void Begin(std::shared_ptr<SendStreamCall> self) {
    self_ = std::move(self);
    MutexLock l(&mu_);
    reading_ = true;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed (or the call failed)
      MutexLock l(&mu_);
      reading_ = false;
      half_closed_ = true;
      return MaybeFinishLocked();
    }
    uint64_t index;
    {
      // reading_ stays set until request_ is no longer used: no other read starts.
      MutexLock l(&mu_);
      index = next_index_++;
      slots_.emplace_back();
    }
    const auto start = std::chrono::steady_clock::now();
    uint64_t estimate = 0;
    const DeliveryWaiters::Id waiter = service_->StartSend(
        context_, request_, identities_,
        [self = shared_from_this(), index, start](SpoolService::SendResult r) {
          self->Complete(index, std::move(r), start);
        },
        &estimate);
    request_.Clear();  // parsed: StartSend keeps nothing of it
    bool cancel = false;
    {
      MutexLock l(&mu_);
      reading_ = false;
      if (Slot* s = SlotLocked(index); s != nullptr && !s->done) {
        s->waiter = waiter;
        s->bytes = estimate;  // until the answer is complete and measured
        answer_bytes_ += estimate;
        cancel = cancelled_ && waiter != 0;  // OnCancel came before the waiter was known
      }
      MaybeReadLocked();
      MaybeFinishLocked();
    }
    if (cancel) service_->waiters()->Cancel(waiter);
  }

  void OnWriteDone(bool ok) override {
    MutexLock l(&mu_);
    writing_ = false;
    answer_bytes_ -= writing_bytes_;
    writing_bytes_ = 0;
    writing_answer_ = {};  // written: its charge goes
    if (!ok) cancelled_ = true;
    WriteNextLocked();
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  void OnCancel() override {
    std::vector<DeliveryWaiters::Id> waiting;
    {
      MutexLock l(&mu_);
      cancelled_ = true;
      for (const Slot& s : slots_) {
        if (!s.done && s.waiter != 0) waiting.push_back(s.waiter);
      }
      MaybeFinishLocked();
    }
    service_->StreamHook(SpoolService::StreamEvent::kCancelled, this);
    // Each completes its slot with CANCELLED; appends still in flight complete by themselves.
    for (DeliveryWaiters::Id id : waiting) service_->waiters()->Cancel(id);
  }

  void OnDone() override {
    service_->StreamHook(SpoolService::StreamEvent::kDone, this);
    self_.reset();  // may destroy this
  }

 private:
  struct Slot {
    bool done = false;
    DeliveryWaiters::Id waiter = 0;
    bool answerable = false;  // done, and serialized into `answer`
    grpc::ByteBuffer answer;
    RequestMemoryBudget::Lease held;  // its charge to --max-waiting-memory, if any
    uint64_t bytes = 0;  // counted in answer_bytes_: the estimate, then the answer's size
  };

  Slot* SlotLocked(uint64_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (index < first_index_ || index - first_index_ >= slots_.size()) return nullptr;
    return &slots_[index - first_index_];
  }

  void Complete(uint64_t index, SpoolService::SendResult r,
                std::chrono::steady_clock::time_point start) {
    if (metrics_) {
      metrics_->ObserveSend(
          r.status.error_code(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!r.status.ok()) metrics_->SendRejected(r.status.error_code());
    }
    service_->StreamHook(SpoolService::StreamEvent::kCompleting, this);
    // Serialized now, outside the lock: until written, the answer holds only its bytes
    // (the reply object, several times larger, goes here).
    kspool::v1::SendResponse& reply = r.reply;
    if (!r.status.ok()) {
      reply.clear_deliveries();
      if (r.sequences.empty()) reply.clear_sequence();
      kspool::v1::Status* st = reply.mutable_status();
      st->set_code(r.status.error_code());
      st->set_message(r.status.error_message());
      if (r.retry_after_ms >= 0) st->set_retry_after_ms(r.retry_after_ms);
    }
    grpc::ByteBuffer answer;
    const bool answerable = SerializeAnswer(&r, &answer).ok();
    const uint64_t bytes = answerable ? answer.Length() : 0;
    MutexLock l(&mu_);
    Slot* s = SlotLocked(index);
    s->done = true;
    s->answerable = answerable;
    s->answer.Swap(&answer);
    s->held = std::move(r.held);
    answer_bytes_ = answer_bytes_ - s->bytes + bytes;
    s->bytes = bytes;
    WriteNextLocked();
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  // Writes the oldest answer if it is complete; answers go out in request order.
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!writing_ && !slots_.empty() && slots_.front().done) {
      Slot& front = slots_.front();
      const bool write = front.answerable && !cancelled_;  // else nobody to answer
      if (write) {
        out_.Clear();
        out_.Swap(&front.answer);
        writing_bytes_ = front.bytes;  // stays in answer_bytes_ until written
        writing_answer_ = std::move(front.held);
      } else {
        answer_bytes_ -= front.bytes;
      }
      slots_.pop_front();
      ++first_index_;
      if (!write) continue;
      writing_ = true;
      // Corked while the next answer is ready too: gRPC sends them in one flush.
      grpc::WriteOptions options;
      if (!slots_.empty() && slots_.front().done) options.set_buffer_hint();
      StartWrite(&out_, options);
    }
  }

  void MaybeReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reading_ || half_closed_ || cancelled_) return;
    if (slots_.size() >= SpoolService::kMaxStreamInflight) return;
    if (answer_bytes_ >= SpoolService::kMaxStreamReplyBytes) {
      // Its answers are not being read fast enough (or at all): wait for writes to
      // complete (OnWriteDone reads again). Once per stall: a warning and a metric.
      if (!paused_for_answers_) {
        paused_for_answers_ = true;
        service_->AnswersUnread(answer_bytes_);
      }
      return;
    }
    paused_for_answers_ = false;
    reading_ = true;
    StartRead(&request_);
  }

  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || reading_ || writing_ || !slots_.empty()) return;
    if (!half_closed_ && !cancelled_) return;
    finished_ = true;
    Finish(cancelled_ ? grpc::Status::CANCELLED : grpc::Status::OK);
    service_->StreamHook(SpoolService::StreamEvent::kFinished, this);
  }

  std::shared_ptr<SendStreamCall> self_;  // set by Begin, released at OnDone
  SpoolService* const service_;
  grpc::CallbackServerContext* const context_;
  Metrics* const metrics_;
  const std::vector<std::string> identities_;  // the caller's, for --acl: one per stream
  grpc::ByteBuffer request_;  // the read in progress (only one at a time)
  Mutex mu_;
  std::deque<Slot> slots_ ABSL_GUARDED_BY(mu_);  // requests read, not yet answered
  uint64_t first_index_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_index_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ByteBuffer out_ ABSL_GUARDED_BY(mu_);  // the write in progress
  // The answers held (Slot::bytes, and the write in progress), against
  // kMaxStreamReplyBytes; the write's own bytes, and its charge to --max-waiting-memory.
  uint64_t answer_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t writing_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  RequestMemoryBudget::Lease writing_answer_ ABSL_GUARDED_BY(mu_);
  bool paused_for_answers_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool half_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SpoolService::SendStream(
    grpc::CallbackServerContext* context) {
  auto call = std::make_shared<SendStreamCall>(this, context, metrics_);
  SendStreamCall* raw = call.get();
  raw->Begin(std::move(call));
  return raw;
}

}  // namespace kspool::agent
