#include "tools/bench/load.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "kspool/v1/spool.grpc.pb.h"
#include "tools/bench/request.h"
#include "tools/bench/tally.h"
#include "base/mutex.h"

namespace kspool::bench {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

namespace {

using Clock = std::chrono::steady_clock;

// One run's shared state. Calls complete on gRPC's callback threads.
class Load {
 public:
  explicit Load(const LoadOptions& o)
      : o_(o), stubs_(MakeStubs(o)), tally_(o.wait_for_kafka), budget_(o.count) {}

  LoadResult Run(const std::function<void(uint64_t)>& progress) {
    start_ = Clock::now();
    end_ = start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(o_.duration_s));
    auto next_progress = start_ + std::chrono::seconds(1);
    if (o_.rate <= 0) {
      for (int c = 0; c < o_.clients; ++c) Issue(c, 0, Clock::now());
    }
    // The open loop's schedule: request k is due at start + k * batch / rate, on
    // channel k % clients, whether or not earlier ones have been answered.
    const double per_request_s = o_.rate > 0 ? o_.batch / o_.rate : 0;
    uint64_t k = 0;
    while (true) {
      auto now = Clock::now();
      if (now >= next_progress) {
        if (progress) progress(tally_.acked());
        next_progress += std::chrono::seconds(1);
      }
      auto wake = std::min(next_progress, now + std::chrono::milliseconds(10));
      if (per_request_s > 0 && !Finished()) {
        auto due = start_ + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(per_request_s * k));
        if (due <= now) {
          if (in_flight_.load() >= kMaxOpenInFlight) {  // the agent is far behind
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
          }
          if (!Issue(static_cast<int>(k % o_.clients), k / o_.clients, due)) break;
          ++k;
          continue;
        }
        wake = std::min(wake, due);
      } else {
        RestartDelayed(now);
        MutexLock l(&mu_);
        if (in_flight_.load() == 0 && delayed_.empty()) break;
      }
      std::this_thread::sleep_until(wake);
    }
    while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return tally_.Finish(std::chrono::duration<double>(Clock::now() - start_).count());
  }

 private:
  static constexpr uint64_t kMaxOpenInFlight = 100000;
  struct Call {
    int client;
    uint64_t n;
    Clock::time_point scheduled;
    grpc::ClientContext ctx;
    kspool::v1::SendRequest req;
    kspool::v1::SendResponse resp;
  };

  bool Finished() const {
    return o_.count ? budget_.load() < static_cast<uint64_t>(o_.batch) : Clock::now() >= end_;
  }

  // Starts request n of client c; false when the run is over (duration or count).
  bool Issue(int c, uint64_t n, Clock::time_point scheduled) {
    if (o_.count) {
      uint64_t left = budget_.load();
      do {
        if (left < static_cast<uint64_t>(o_.batch)) return false;
      } while (!budget_.compare_exchange_weak(left, left - o_.batch));
    } else if (Clock::now() >= end_) {
      return false;
    }
    auto* call = new Call{c, n, scheduled, {}, MakeRequest(o_, c, n), {}};
    call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    in_flight_.fetch_add(1);
    stubs_[c]->async()->Send(&call->ctx, &call->req, &call->resp,
                             [this, call](grpc::Status s) { Done(call, s); });
    return true;
  }

  void Done(Call* call, const grpc::Status& s) {
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - call->scheduled).count();
    const int c = call->client;
    const uint64_t next = call->n + 1;
    bool retry_later = false;
    if (s.ok()) {
      tally_.Answered(call->req, call->resp, ms);
    } else {
      tally_.Failed(s.error_code());
      retry_later = o_.rate <= 0;
      // A refused request waits 10 ms (as a client honouring back-off would).
      if (retry_later) {
        MutexLock l(&mu_);
        delayed_.push_back({c, next, Clock::now() + std::chrono::milliseconds(10)});
      }
    }
    delete call;
    if (o_.rate <= 0 && !retry_later) Issue(c, next, Clock::now());
    in_flight_.fetch_sub(1);
  }

  void RestartDelayed(Clock::time_point now) {
    std::vector<Delayed> due;
    {
      MutexLock l(&mu_);
      for (auto it = delayed_.begin(); it != delayed_.end();) {
        if (it->at <= now) {
          due.push_back(*it);
          it = delayed_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const Delayed& d : due) Issue(d.client, d.n, Clock::now());
  }

  struct Delayed {
    int client;
    uint64_t n;
    Clock::time_point at;
  };

  const LoadOptions& o_;
  std::vector<std::unique_ptr<kspool::v1::Spool::Stub>> stubs_;
  Clock::time_point start_, end_;
  Tally tally_;
  std::atomic<uint64_t> budget_, in_flight_{0};
  Mutex mu_;
  std::vector<Delayed> delayed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

LoadResult RunLoad(const LoadOptions& o, const std::function<void(uint64_t)>& progress) {
  Load load(o);
  return load.Run(progress);
}

}  // namespace kspool::bench
