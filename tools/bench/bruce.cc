#include "tools/bench/bruce.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "tools/common/bruce_writer.h"

namespace kspool::bench {

BruceLoadResult RunBruceDatagramLoad(const std::string& path, int senders, int value_bytes,
                                     int topics, double duration_s) {
  using Clock = std::chrono::steady_clock;
  std::atomic<uint64_t> sent{0}, errors{0};
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(duration_s));
  std::vector<std::thread> threads;
  for (int c = 0; c < senders; ++c) {
    threads.emplace_back([&, c] {
      kspool::tools::BruceConnection conn;
      if (std::string err = conn.Connect(path); !err.empty()) {
        std::fprintf(stderr, "kspool-bench: %s\n", err.c_str());
        ++errors;
        return;
      }
      uint64_t rng = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(c + 1);
      std::string value(static_cast<size_t>(value_bytes), 'x');
      uint64_t n = 0;
      int64_t now_ms = 0;
      std::vector<std::string> names;
      for (int t = 0; t < std::max(topics, 1); ++t) names.push_back("bench-" + std::to_string(t));
      while (true) {
        if (n % 256 == 0) {
          if (Clock::now() >= end) break;
          now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
        }
        for (size_t i = 0; i < value.size(); i += 8) {  // xorshift: incompressible
          rng ^= rng << 13;
          rng ^= rng >> 7;
          rng ^= rng << 17;
          std::memcpy(value.data() + i, &rng, std::min<size_t>(8, value.size() - i));
        }
        const std::string& topic = names[n % names.size()];
        if (conn.Send(kspool::tools::EncodeBruceMessage(topic, now_ms, "", value)) != 0) {
          ++errors;
          return;
        }
        ++n;
      }
      sent += n;
    });
  }
  for (auto& t : threads) t.join();
  BruceLoadResult r;
  r.sent = sent.load();
  r.errors = errors.load();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace kspool::bench
