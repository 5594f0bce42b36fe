// Reconciliation under 30 SIGKILLs (label soak: run by hand, docs/TESTING.md). Three
// clients send keyed and unkeyed messages to three topics while the agent is killed at
// random moments; some kills come during a full Kafka outage, some restarts go into
// one, some while a partition has no leader. After the last restart, once everything is
// delivered, a consumer over every partition must find each acknowledged message exactly
// once, and GetDeliveryStatus must name that copy.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "base/mutex.h"
#include "tests/integration/exactly_once.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using namespace std::chrono_literals;

class ReconcileSoak : public ::testing::Test {
 protected:
  void Restart(std::unique_ptr<AgentProcess>& agent, const std::string& brokers) {
    agent->process().Signal(SIGKILL);
    ASSERT_TRUE(agent->process().Wait(10s).has_value());
    agent = std::make_unique<AgentProcess>(wal_, log_, brokers);
    MutexLock l(&mu_);
    address_ = agent->address();
  }
  // One message to each partition, delivered: each gets a settled watermark to be read
  // from (kspool-devkafka answers a lookup by time with "no record").
  void WarmUp(AgentProcess& agent, const std::string& topic, int partitions) {
    kspool::v1::SendRequest req;
    for (int p = 0; p < partitions; ++p) {
      auto* m = req.add_messages();
      m->set_topic(topic);
      m->set_value("warm-up");
      m->set_partition(p);
    }
    kspool::v1::SendResponse resp;
    ASSERT_TRUE(agent.Send(req, &resp).ok());
    MutexLock l(&mu_);
    for (int i = 0; i < resp.sequence_size(); ++i) acked_[resp.sequence(i)] = topic;
  }
  void Client(int c) {
    std::mt19937 rng(c);
    const char* topics[] = {"sa", "sb", "sc"};
    for (int n = 0; !stop_; ++n) {
      std::string to;
      {
        MutexLock l(&mu_);
        to = address_;
      }
      auto stub = kspool::v1::Spool::NewStub(grpc::CreateChannel(to, grpc::InsecureChannelCredentials()));
      kspool::v1::SendRequest req;
      for (int i = 0; i < 20; ++i) {
        auto* m = req.add_messages();
        m->set_topic(topics[(n + i) % 3]);
        m->set_value("c" + std::to_string(c) + "-" + std::to_string(n) + "-" + std::to_string(i));
        if (i % 2 == 0) m->set_key("k" + std::to_string(rng() % 32));
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 2s);
      kspool::v1::SendResponse resp;
      if (stub->Send(&ctx, req, &resp).ok()) {
        MutexLock l(&mu_);
        for (int i = 0; i < resp.sequence_size(); ++i) {
          acked_[resp.sequence(i)] = req.messages(i).topic();
        }
      } else {
        std::this_thread::sleep_for(20ms);
      }
      std::this_thread::sleep_for(5ms);
    }
  }

  kspool::testing::TempDir dir_;
  const std::string wal_ = dir_.sub("wal");
  const std::string log_ = dir_.sub("agent.log");
  Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
};

TEST_F(ReconcileSoak, ThirtyKillsThroughOutagesAndLeaderlessPartitionsLeaveOneCopyEach) {
  DevKafka kafka(dir_.path(), 3, {"sa:4", "sb:3", "sc:2"});
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
  WarmUp(*agent, "sa", 4);
  WarmUp(*agent, "sb", 3);
  WarmUp(*agent, "sc", 2);
  ASSERT_TRUE(agent->WaitUntilDrained(10s));
  {
    MutexLock l(&mu_);
    address_ = agent->address();
  }
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) clients.emplace_back([this, c] { Client(c); });
  std::mt19937 rng(std::random_device{}());
  constexpr int kKills = 30;
  int in_outage = 0, into_outage = 0, leaderless = 0;
  for (int k = 0; k < kKills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
    switch (k % 5) {
      case 0:  // killed during a full outage, restarted into it
        ASSERT_EQ(kafka.Command("broker down all"), "OK");
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));
        Restart(agent, kafka.bootstrap());
        std::this_thread::sleep_for(300ms);
        ASSERT_EQ(kafka.Command("broker up all"), "OK");
        ++in_outage;
        break;
      case 1:  // killed while Kafka is up, restarted into an outage
        Restart(agent, kafka.bootstrap());
        ASSERT_EQ(kafka.Command("broker down all"), "OK");
        std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 500));
        ASSERT_EQ(kafka.Command("broker up all"), "OK");
        ++into_outage;
        break;
      case 2: {  // restarted while one partition has no leader
        const std::string p = std::to_string(rng() % 3);
        ASSERT_EQ(kafka.Command("leader sb " + p + " none"), "OK");
        Restart(agent, kafka.bootstrap());
        std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
        ASSERT_EQ(kafka.Command("leader sb " + p + " 1"), "OK");
        ++leaderless;
        break;
      }
      default:
        Restart(agent, kafka.bootstrap());
    }
  }
  std::this_thread::sleep_for(300ms);
  stop_ = true;
  for (auto& t : clients) t.join();
  ASSERT_TRUE(agent->WaitUntilDrained(60s)) << kspool::testing::ReconcileLines(log_);
  std::map<uint64_t, std::string> acked;
  {
    MutexLock l(&mu_);
    acked = acked_;
  }
  auto copies = kspool::testing::ReadCopies(kafka.bootstrap(), {"sa", "sb", "sc"}, acked.size());
  const size_t duplicates = kspool::testing::CheckExactlyOnce(*agent, acked, copies);
  EXPECT_EQ(duplicates, 0u) << kspool::testing::ReconcileLines(log_);
  std::printf("kills=%d (%d in an outage, %d into one, %d with a leaderless partition) acked=%zu "
              "duplicates=%zu\n",
              kKills, in_outage, into_outage, leaderless, acked.size(), duplicates);
  EXPECT_GT(acked.size(), 5000u);
}

}  // namespace
}  // namespace kspool
