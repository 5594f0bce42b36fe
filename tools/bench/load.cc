#include "tools/bench/load.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "kspool/v1/spool.grpc.pb.h"

namespace kspool::bench {
namespace {

using Clock = std::chrono::steady_clock;

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    default: return "OTHER";
  }
}

// Fills `v` with incompressible bytes (LZ4 in RocksDB and librdkafka must not shrink
// the load), 8 at a time from a xorshift generator.
void FillRandom(std::string* v, uint64_t* state) {
  uint64_t x = *state;
  for (size_t i = 0; i < v->size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v->data() + i, &x, std::min<size_t>(8, v->size() - i));
  }
  *state = x;
}

kspool::v1::SendRequest MakeRequest(const LoadOptions& o, int client, uint64_t n) {
  kspool::v1::SendRequest req;
  static thread_local uint64_t rng = 0x9E3779B97F4A7C15ull * (client + 1);
  std::string value(static_cast<size_t>(o.size), 'x');
  for (int i = 0; i < o.batch; ++i) {
    auto* m = req.add_messages();
    m->set_topic("bench-" + std::to_string((client + i) % o.topics));
    FillRandom(&value, &rng);  // tagged below with who sent it
    std::string tag = std::to_string(client) + ":" + std::to_string(n) + ":" + std::to_string(i);
    value.replace(0, std::min(tag.size(), value.size()), tag.substr(0, value.size()));
    m->set_value(value);
    if (o.keys) m->set_key("k" + std::to_string((n * 31 + i) % 1024));
  }
  return req;
}

}  // namespace

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * (sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

LoadResult RunLoad(const LoadOptions& o, const std::function<void(uint64_t)>& progress) {
  std::atomic<uint64_t> acked{0}, requests{0}, budget{o.count};
  std::atomic<bool> stop{false};
  std::mutex mu;
  LoadResult result;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(o.duration_s));
  // Open loop: each client owns every clients-th slot of a global schedule.
  const double per_request_s = o.rate > 0 ? o.batch / o.rate : 0;

  auto client = [&](int c) {
    auto stub = kspool::v1::Spool::NewStub(
        grpc::CreateChannel(o.agent, grpc::InsecureChannelCredentials()));
    std::vector<double> lat;
    std::map<std::string, uint64_t> fail;
    for (uint64_t n = 0; !stop.load(); ++n) {
      if (o.count) {
        uint64_t left = budget.load();
        do {
          if (left < static_cast<uint64_t>(o.batch)) break;
        } while (!budget.compare_exchange_weak(left, left - o.batch));
        if (left < static_cast<uint64_t>(o.batch)) break;
      } else if (Clock::now() >= end) {
        break;
      }
      auto scheduled = Clock::now();
      if (per_request_s > 0) {
        scheduled = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                per_request_s * (static_cast<double>(n) * o.clients + c)));
        if (scheduled >= end && !o.count) break;
        std::this_thread::sleep_until(scheduled);
      }
      kspool::v1::SendRequest req = MakeRequest(o, c, n);
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      kspool::v1::SendResponse resp;
      grpc::Status s = stub->Send(&ctx, req, &resp);
      requests.fetch_add(1);
      if (s.ok()) {
        acked.fetch_add(o.batch);
        lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - scheduled).count());
      } else {
        ++fail[CodeName(s.error_code())];
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::lock_guard<std::mutex> l(mu);
    result.latencies_ms.insert(result.latencies_ms.end(), lat.begin(), lat.end());
    for (const auto& [k, v] : fail) result.failures[k] += v;
  };

  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) threads.emplace_back(client, c);
  std::thread reporter([&] {
    while (!stop.load()) {
      for (int i = 0; i < 10 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!stop.load() && progress) progress(acked.load());
    }
  });
  for (auto& t : threads) t.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  reporter.join();
  result.acked = acked.load();
  result.requests = requests.load();
  std::sort(result.latencies_ms.begin(), result.latencies_ms.end());
  return result;
}

}  // namespace kspool::bench
