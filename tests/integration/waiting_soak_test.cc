// Soak (ctest label `soak`, not in tools/test.sh; docs/TESTING.md says how to run it):
// the full-size measurement behind MemoryBounds' waiting-Sends test. 600 WAIT_FOR_KAFKA
// Sends of 10,000 small messages each (6,000,000 waiting messages) wait through a Kafka
// outage on a real agent over kspool-devkafka. The agent's RSS, sampled throughout,
// stays within what --max-waiting-memory lets them hold plus a stated margin, and comes
// back near its baseline once Kafka returns and every Send is answered. Before waiters
// kept 24 bytes a message (CompactOutcomes), this load took the agent from 31 to
// 1,064 MB. A few minutes on two cores; it prints its RSS figures.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/process_memory.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::WaitUntil;
using namespace std::chrono_literals;

using kspool::testing::kMiB;
using kspool::testing::Metric;
using kspool::testing::RssBytes;
constexpr int kSends = 600;
constexpr int kPerSend = 10000;  // --max-batch-messages' default
// What the agent may hold besides the waiting Sends (--max-waiting-memory): the drain's
// window of entries read while Kafka is down (--max-inflight-bytes, 32 MiB by default,
// and its per-entry state), RocksDB's memtables (at most 96 MiB, wal/open_db.cc), gRPC's
// state of 600 open calls and the requests it is receiving, and the allocator's slack.
constexpr int64_t kWindowBytes = 32 * kMiB;
constexpr int64_t kMemtableBytes = 96 * kMiB;
constexpr int64_t kMarginBytes = 128 * kMiB;
constexpr int64_t kAnsweringBytes = 64 * kMiB;
// Once every Send is answered: the memtables, the drain's window (its tables keep the
// size they grew to) and 64 MiB of slack.
constexpr int64_t kAfterBytes = kMemtableBytes + kWindowBytes + 64 * kMiB;

// The highest RSS of `pid` seen while it runs, sampled every 20 ms.
class PeakRss {
 public:
  explicit PeakRss(pid_t pid) : pid_(pid), peak_(RssBytes(pid)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        peak_ = std::max<int64_t>(peak_, RssBytes(pid_));
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  ~PeakRss() {
    stop_ = true;
    thread_.join();
  }
  int64_t peak() const { return peak_; }

 private:
  const pid_t pid_;
  std::atomic<int64_t> peak_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(WaitingSoak, SixHundredSendsOfTenThousandStayWithinTheWaitingBoundAndGiveItBack) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 1, {"w:4"});
  // 6,000,000 waiting messages are charged 89 bytes each (waiter and answer): 534 MB.
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--max-streams-per-connection", "1000", "--max-waiting-memory", "640MiB"});
  const pid_t pid = agent.process().pid();
  {
    kspool::v1::SendRequest req;
    req.add_messages()->set_topic("w");
    kspool::v1::SendResponse resp;
    ASSERT_TRUE(agent.Send(req, &resp).ok());
    ASSERT_TRUE(agent.WaitUntilDrained(30s));
  }
  const double bound = Metric(agent.http_address(), "kspool_waiting_memory_limit_bytes");
  ASSERT_GT(bound, 0);
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  const int64_t base = RssBytes(pid);
  PeakRss sampler(pid);

  // One request for every call: the client keeps one copy, not 600.
  kspool::v1::SendRequest req;
  req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  for (int j = 0; j < kPerSend; ++j) {
    auto* m = req.add_messages();
    m->set_topic("w");
    m->set_value("v" + std::to_string(j));
  }
  struct Call {
    grpc::ClientContext ctx;
    kspool::v1::SendResponse resp;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::atomic<int> answered{0}, fully_delivered{0};
  std::mutex mu;
  std::string first_error;
  // On an early return, the calls end before their state goes.
  struct EndCalls {
    std::vector<std::unique_ptr<Call>>* calls;
    std::atomic<int>* answered;
    ~EndCalls() {
      for (auto& c : *calls) c->ctx.TryCancel();
      WaitUntil([&] { return *answered == static_cast<int>(calls->size()); }, 30s);
    }
  } end_calls{&calls, &answered};
  auto waiting = [&] { return Metric(agent.http_address(), "kspool_delivery_waiting_sends"); };
  for (int i = 0; i < kSends; ++i) {
    // In waves of 100 (24 MB), each appended before the next: 600 at once are more than
    // --max-append-queue-bytes (64 MiB) holds, and are refused until the disk catches up.
    if (i > 0 && i % 100 == 0) {
      const uint64_t appended = 2 + uint64_t(i) * kPerSend;  // and the first message
      ASSERT_TRUE(WaitUntil(
          [&] { return agent.WalStats().next_sequence() == appended || answered > 0; }, 60s, 100ms))
          << agent.WalStats().next_sequence() << " of " << appended << " appended";
      ASSERT_EQ(answered.load(), 0) << first_error;
    }
    calls.push_back(std::make_unique<Call>());
    Call* c = calls.back().get();
    c->ctx.set_deadline(std::chrono::system_clock::now() + 400s);
    agent.spool().async()->Send(&c->ctx, &req, &c->resp, [&, c](grpc::Status s) {
      int delivered = 0;
      for (const auto& d : c->resp.deliveries()) {
        delivered += d.state() == kspool::v1::DeliveryStatus::DELIVERED;
      }
      if (s.ok() && delivered == kPerSend) {
        fully_delivered.fetch_add(1);
      } else {
        std::lock_guard<std::mutex> l(mu);
        if (first_error.empty()) {
          first_error = std::to_string(s.error_code()) + " " + s.error_message() + ", " +
                        std::to_string(delivered) + " delivered";
        }
      }
      c->resp.Clear();  // the client's copies are not the agent's
      answered.fetch_add(1);
    });
  }
  ASSERT_TRUE(WaitUntil([&] { return waiting() == kSends || answered > 0; }, 60s, 100ms))
      << waiting() << " waiting, " << answered << " answered: " << first_error;
  ASSERT_EQ(answered.load(), 0) << first_error;
  std::this_thread::sleep_for(1s);  // the last requests' buffers are gone
  const int64_t waiting_rss = RssBytes(pid);
  const int64_t waiting_peak = sampler.peak();
  const double charged = Metric(agent.http_address(), "kspool_waiting_memory_bytes");
  std::cout << "[ info ] RSS " << base / kMiB << " MB before; " << waiting_rss / kMiB << " MB with "
            << kSends * kPerSend << " messages waiting (peak " << waiting_peak / kMiB
            << " MB while sending); charged " << charged / kMiB << " MB of --max-waiting-memory "
            << bound / kMiB << " MB" << std::endl;
  EXPECT_LE(charged, bound);
  EXPECT_GE(charged, double(kSends) * kPerSend * 89) << "89 bytes a waiting message";
  const int64_t allowed = int64_t(bound) + kWindowBytes + kMemtableBytes + kMarginBytes;
  EXPECT_LT(waiting_peak - base, allowed)
      << "peak RSS " << waiting_peak / kMiB << " MB, " << base / kMiB << " MB before";

  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  ASSERT_TRUE(WaitUntil([&] { return answered.load() == kSends; }, 300s, 500ms))
      << answered << " of " << kSends << " answered";
  const int64_t peak = sampler.peak();
  EXPECT_EQ(fully_delivered.load(), kSends) << first_error;
  EXPECT_EQ(Metric(agent.http_address(), "kspool_waiting_memory_bytes"), 0);
  // While they are answered, each answer expands to a full outcome and a delivery in
  // its reply per message (about 2 MB for 10,000), and the drain answers many at once:
  // 64 MiB more (measured: 54 MB above the waiting peak).
  EXPECT_LT(peak - base, allowed + kAnsweringBytes)
      << "peak RSS " << peak / kMiB << " MB, " << base / kMiB << " MB before";
  // Answered, their memory goes back to the system (malloc_trim after large releases).
  const bool back = WaitUntil([&] { return RssBytes(pid) < base + kAfterBytes; }, 60s, 200ms);
  std::cout << "[ info ] RSS peak " << peak / kMiB << " MB; " << RssBytes(pid) / kMiB
            << " MB after all " << kSends << " were answered (bound: base + " << (allowed >> 20)
            << " MiB while waiting, " << ((allowed + kAnsweringBytes) >> 20) << " while answering, "
            << (kAfterBytes >> 20) << " MiB after)" << std::endl;
  EXPECT_TRUE(back) << "RSS " << RssBytes(pid) / kMiB << " MB, " << base / kMiB << " MB before";
}

}  // namespace
}  // namespace kspool
