// The streaming load: each client opens one SendStream on its own channel and keeps
// options.in_flight single requests outstanding on it. gRPC's callback API allows one
// write at a time, so the writer starts the next request when the last is written and
// fewer than K are unanswered; the reader takes the responses in order, matches each to
// the oldest unanswered request (the API answers a stream's requests in order) and
// checks it. A stream that ends with an error counts its unanswered requests as failed
// with that code and is reopened 10 ms later while the run lasts.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <deque>
#include <thread>
#include <vector>

#include "kspool/v1/spool.grpc.pb.h"
#include "tools/bench/load.h"
#include "tools/bench/request.h"
#include "tools/bench/tally.h"
#include "base/mutex.h"

namespace kspool::bench {
namespace {

using Clock = std::chrono::steady_clock;
using kspool::v1::SendRequest;
using kspool::v1::SendResponse;

class StreamLoad;

// One client's stream. Deletes itself when the call is done (after telling the load).
class StreamClient : public grpc::ClientBidiReactor<SendRequest, SendResponse> {
 public:
  StreamClient(StreamLoad* load, int client, uint64_t first_n);
  void Start(kspool::v1::Spool::Stub* stub, Clock::time_point deadline);

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& s) override;

 private:
  struct Pending {
    Clock::time_point sent;
    SendRequest request;
  };
  // Starts the next write, or half-closes the stream once the run is over.
  void Pump();

  StreamLoad* const load_;
  const int client_;
  grpc::ClientContext ctx_;
  SendRequest write_;           // the request being written (only while writing_)
  SendResponse read_;           // the response being read (the reader's alone)
  uint64_t last_sequence_ = 0;  // the reader's alone
  Mutex mu_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);  // written or being written, unanswered
  uint64_t n_ ABSL_GUARDED_BY(mu_);                   // next request number
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_closed_ ABSL_GUARDED_BY(mu_) = false;
};

class StreamLoad {
 public:
  explicit StreamLoad(const LoadOptions& o)
      : o_(o), tally_(o.wait_for_kafka), stubs_(MakeStubs(o)) {}

  LoadResult Run(const std::function<void(uint64_t)>& progress) {
    start_ = Clock::now();
    end_ = start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(o_.duration_s));
    for (int c = 0; c < o_.clients; ++c) Open(c, 0);
    auto next_progress = start_ + std::chrono::seconds(1);
    while (true) {
      auto now = Clock::now();
      if (now >= next_progress) {
        if (progress) progress(tally_.acked());
        next_progress += std::chrono::seconds(1);
      }
      std::vector<Reopen> due;
      {
        MutexLock l(&mu_);
        for (auto it = reopen_.begin(); it != reopen_.end();) {
          if (it->at <= now || Over()) {
            if (!Over()) due.push_back(*it);
            it = reopen_.erase(it);
          } else {
            ++it;
          }
        }
        if (open_ == 0 && reopen_.empty() && due.empty()) break;
      }
      for (const Reopen& r : due) Open(r.client, r.n);
      std::this_thread::sleep_until(std::min(next_progress, now + std::chrono::milliseconds(10)));
    }
    return tally_.Finish(std::chrono::duration<double>(Clock::now() - start_).count());
  }

  bool Over() const { return Clock::now() >= end_; }
  const LoadOptions& options() const { return o_; }
  Tally& tally() { return tally_; }

  // From a client's OnDone: `failed` streams are reopened (numbering requests from n).
  void Ended(int client, bool failed, uint64_t n) {
    MutexLock l(&mu_);
    --open_;
    if (failed && !Over())
      reopen_.push_back({client, n, Clock::now() + std::chrono::milliseconds(10)});
  }

 private:
  struct Reopen {
    int client;
    uint64_t n;
    Clock::time_point at;
  };

  void Open(int c, uint64_t n) {
    {
      MutexLock l(&mu_);
      ++open_;
    }
    (new StreamClient(this, c, n))->Start(stubs_[c].get(), end_ + std::chrono::seconds(60));
  }

  const LoadOptions& o_;
  Tally tally_;
  std::vector<std::unique_ptr<kspool::v1::Spool::Stub>> stubs_;
  Clock::time_point start_, end_;
  Mutex mu_;
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // streams started and not done
  std::vector<Reopen> reopen_ ABSL_GUARDED_BY(mu_);
};

StreamClient::StreamClient(StreamLoad* load, int client, uint64_t first_n)
    : load_(load), client_(client), n_(first_n) {}

void StreamClient::Start(kspool::v1::Spool::Stub* stub, Clock::time_point deadline) {
  ctx_.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::duration_cast<std::chrono::system_clock::duration>(deadline - Clock::now()));
  stub->async()->SendStream(&ctx_, this);
  StartRead(&read_);
  Pump();
  StartCall();
}

void StreamClient::Pump() {
  bool write = false, close = false;
  {
    MutexLock l(&mu_);
    if (writing_ || writes_closed_) return;
    if (load_->Over()) {
      writes_closed_ = close = true;
    } else if (pending_.size() < static_cast<size_t>(load_->options().in_flight)) {
      write_ = MakeRequest(load_->options(), client_, n_++);
      pending_.push_back({Clock::now(), write_});
      writing_ = write = true;
    }
  }
  if (write) StartWrite(&write_);
  if (close) StartWritesDone();
}

void StreamClient::OnWriteDone(bool ok) {
  {
    MutexLock l(&mu_);
    writing_ = false;
    if (!ok) {  // the stream is broken; OnDone tells why
      writes_closed_ = true;
      return;
    }
  }
  Pump();
}

void StreamClient::OnReadDone(bool ok) {
  if (!ok) return;  // the agent closed its side; OnDone follows
  Pending p;
  {
    MutexLock l(&mu_);
    if (pending_.empty()) {
      load_->tally().Failed(grpc::StatusCode::INTERNAL);  // an answer to nothing
    } else {
      p = std::move(pending_.front());
      pending_.pop_front();
    }
  }
  if (p.request.messages_size() > 0) {
    const int code = read_.has_status() ? read_.status().code() : 0;
    if (code != 0) {
      load_->tally().Failed(code);
    } else {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - p.sent).count();
      if (read_.sequence_size() > 0) {
        if (read_.sequence(0) <= last_sequence_) load_->tally().SequenceRegression();
        last_sequence_ = read_.sequence(read_.sequence_size() - 1);
      }
      load_->tally().Answered(p.request, read_, ms);
    }
  }
  StartRead(&read_);
  Pump();
}

void StreamClient::OnDone(const grpc::Status& s) {
  size_t unanswered;
  uint64_t n;
  {
    MutexLock l(&mu_);
    unanswered = pending_.size();
    n = n_;
  }
  const bool failed = !s.ok() || unanswered > 0;
  if (failed) load_->tally().StreamFailed();
  const int code = s.ok() ? grpc::StatusCode::INTERNAL : s.error_code();
  for (size_t i = 0; i < unanswered; ++i) load_->tally().Failed(code);
  StreamLoad* load = load_;
  const int client = client_;
  delete this;
  load->Ended(client, failed, n);
}

}  // namespace

LoadResult RunStreamLoad(const LoadOptions& o, const std::function<void(uint64_t)>& progress) {
  StreamLoad load(o);
  return load.Run(progress);
}

}  // namespace kspool::bench
