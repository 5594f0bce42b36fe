// The delivery feed while one message is stuck, end to end: a real agent with a short
// --delivery-retention, a kspool-devkafka cluster where one partition has no leader, and
// a healthy topic delivering meanwhile. The feed stops at the stuck message (in sequence
// order), so the index must keep what lies above it past the retention: a follower from
// the stuck message or from kspool_delivery_oldest_sequence is not refused and gets
// every outcome once the leader is back, and GetDeliveryStatus still knows the healthy
// topic's outcomes.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::WaitUntil;
using kspool::v1::DeliveryStatus;
using namespace std::chrono_literals;

constexpr auto kRetention = 2s;

// Follows WatchDeliveries from `from` on its own thread until it has read the outcome of
// `until` (or beyond), the stream ends, or `Stop()`.
class Follower {
 public:
  Follower(AgentProcess& agent, uint64_t from, uint64_t until) {
    ctx_.set_deadline(std::chrono::system_clock::now() + 60s);
    kspool::v1::WatchDeliveriesRequest req;
    req.set_from_sequence(from);
    reader_ = agent.spool().WatchDeliveries(&ctx_, req);
    thread_ = std::thread([this, until] {
      DeliveryStatus d;
      while (reader_->Read(&d)) {
        seen_.push_back(d);
        seen_count_.store(seen_.size());
        if (d.sequence() >= until) {
          ctx_.TryCancel();
          break;
        }
      }
      status_ = reader_->Finish();
      done_.store(true);
    });
  }
  ~Follower() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    ctx_.TryCancel();
    thread_.join();
  }
  bool done() const { return done_.load(); }
  size_t count() const { return seen_count_.load(); }
  // After Stop() or done().
  const std::vector<DeliveryStatus>& seen() const { return seen_; }
  const grpc::Status& status() const { return status_; }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<DeliveryStatus>> reader_;
  std::vector<DeliveryStatus> seen_;
  std::atomic<size_t> seen_count_{0};
  std::atomic<bool> done_{false};
  grpc::Status status_;
  std::thread thread_;
};

std::vector<uint64_t> Send(AgentProcess& agent, const std::string& topic, int n,
                           int partition = -1) {
  kspool::v1::SendRequest req;
  for (int i = 0; i < n; ++i) {
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value(topic + "-" + std::to_string(i));
    if (partition >= 0) m->set_partition(partition);
  }
  kspool::v1::SendResponse resp;
  grpc::Status s = agent.Send(req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return {resp.sequence().begin(), resp.sequence().end()};
}

std::vector<DeliveryStatus> Statuses(AgentProcess& agent, const std::vector<uint64_t>& seqs) {
  kspool::v1::GetDeliveryStatusRequest req;
  for (uint64_t s : seqs) req.add_sequences(s);
  kspool::v1::GetDeliveryStatusResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  grpc::Status s = agent.spool().GetDeliveryStatus(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return {resp.statuses().begin(), resp.statuses().end()};
}

bool AllIn(const std::vector<DeliveryStatus>& statuses, DeliveryStatus::State state) {
  for (const DeliveryStatus& d : statuses) {
    if (d.state() != state) return false;
  }
  return !statuses.empty();
}

TEST(DeliveryHeldBack, AStuckMessageCutsOffNoFollowerAndHidesNoHealthyOutcome) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.sub("kafka.log"), 1, {"stuck:2", "ok:3"});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--delivery-retention", "2s"});
  Send(agent, "stuck", 2);  // the agent learns the topics' layout
  Send(agent, "ok", 2);
  ASSERT_TRUE(agent.WaitUntilDrained(10s));
  ASSERT_EQ(kafka.Command("leader stuck 0 none"), "OK");
  std::this_thread::sleep_for(1500ms);  // the agent's metadata (refreshed every second) knows

  const uint64_t stuck = Send(agent, "stuck", 1, 0).at(0);
  // Nothing else is sent meanwhile: the healthy messages take the next 30 numbers.
  Follower from_stuck(agent, stuck, stuck + 30);
  std::vector<uint64_t> healthy;
  for (int b = 0; b < 3; ++b) {
    for (uint64_t s : Send(agent, "ok", 10)) healthy.push_back(s);
  }
  ASSERT_TRUE(WaitUntil([&] { return AllIn(Statuses(agent, healthy), DeliveryStatus::DELIVERED); },
                        10s));
  const auto delivered = std::chrono::steady_clock::now();

  // Past the retention (and a maintenance round, every second) since they were delivered.
  std::this_thread::sleep_for(kRetention + 1500ms);
  std::vector<DeliveryStatus> later = Statuses(agent, healthy);
  for (size_t i = 0; i < later.size(); ++i) {
    EXPECT_EQ(later[i].state(), DeliveryStatus::DELIVERED)
        << healthy[i] << ": " << later[i].error() << " ("
        << std::chrono::duration<double>(std::chrono::steady_clock::now() - delivered).count()
        << " s after delivery)";
  }
  EXPECT_EQ(Statuses(agent, {stuck}).at(0).state(), DeliveryStatus::PENDING);
  EXPECT_FALSE(from_stuck.done()) << "ended: " << from_stuck.status().error_message();
  EXPECT_EQ(from_stuck.count(), 0u) << "the feed waits at the stuck message";

  // A follower from where the index starts is not refused either.
  const double oldest =
      kspool::testing::ScrapeMetrics(agent.http_address())["kspool_delivery_oldest_sequence"];
  ASSERT_GT(oldest, 0);
  EXPECT_LE(static_cast<uint64_t>(oldest), stuck);
  Follower from_oldest(agent, static_cast<uint64_t>(oldest), healthy.back());
  std::this_thread::sleep_for(1500ms);  // a maintenance round or more
  EXPECT_FALSE(from_oldest.done()) << "ended: " << from_oldest.status().error_message();

  // The leader is back: the stuck message is delivered, then every healthy outcome comes.
  ASSERT_EQ(kafka.Command("leader stuck 0 1"), "OK");
  ASSERT_TRUE(WaitUntil([&] { return from_stuck.done(); }, 30s)) << from_stuck.count();
  const std::vector<DeliveryStatus>& seen = from_stuck.seen();
  ASSERT_EQ(seen.size(), 31u) << from_stuck.status().error_message();
  ASSERT_EQ(healthy.back(), stuck + 30);
  EXPECT_EQ(seen[0].sequence(), stuck);
  EXPECT_EQ(seen[0].state(), DeliveryStatus::DELIVERED);
  EXPECT_EQ(seen[0].partition(), 0);
  for (size_t i = 0; i < healthy.size(); ++i) {
    EXPECT_EQ(seen[i + 1].sequence(), healthy[i]);
    EXPECT_EQ(seen[i + 1].state(), DeliveryStatus::DELIVERED);
    EXPECT_EQ(seen[i + 1].topic(), "ok");
  }
  ASSERT_TRUE(WaitUntil([&] { return from_oldest.done(); }, 10s)) << from_oldest.count();
  ASSERT_FALSE(from_oldest.seen().empty()) << from_oldest.status().error_message();
  EXPECT_EQ(from_oldest.seen().back().sequence(), healthy.back());

  // Once the feed has had them, they age as any outcome: the retention after the release.
  EXPECT_TRUE(WaitUntil(
      [&] { return AllIn(Statuses(agent, healthy), DeliveryStatus::STATE_UNKNOWN); }, 10s));
}

}  // namespace
}  // namespace kspool
