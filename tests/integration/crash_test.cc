// Crash safety: clients send continuously while the agent is SIGKILLed again and again
// (also while every broker is down, and during recovery replay) and restarted on the
// same WAL directory. At the end every acknowledged message must be in Kafka.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "base/mutex.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

// Clients that keep sending to whatever address the agent currently has.
class Senders {
 public:
  void SetAddress(const std::string& address) {
    MutexLock l(&mu_);
    address_ = address;
    ++generation_;
  }
  explicit Senders(std::string topic = "crash") : topic_(std::move(topic)) {}
  void Start(int n) {
    for (int c = 0; c < n; ++c) threads_.emplace_back([this, c] { Run(c); });
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  std::map<uint64_t, std::string> acked() {
    MutexLock l(&mu_);
    return acked_;
  }
  int failures() const { return failures_.load(); }

 private:
  void Run(int client) {
    std::mt19937 rng(client);
    std::unique_ptr<kspool::v1::Spool::Stub> stub;
    uint64_t gen = 0;
    for (int n = 0; !stop_; ++n) {
      {
        MutexLock l(&mu_);
        if (gen != generation_) {
          gen = generation_;
          stub = kspool::v1::Spool::NewStub(
              grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
        }
      }
      kspool::v1::SendRequest req;
      int count = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < count; ++i) {
        auto* m = req.add_messages();
        m->set_topic(topic_);
        m->set_value("c" + std::to_string(client) + "-" + std::to_string(n) + "-" + std::to_string(i));
        if (i % 3 == 0) m->set_key("k" + std::to_string(rng() % 16));
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      kspool::v1::SendResponse resp;
      grpc::Status s = stub->Send(&ctx, req, &resp);
      if (s.ok()) {
        MutexLock l(&mu_);
        for (int i = 0; i < count; ++i) acked_[resp.sequence(i)] = req.messages(i).value();
      } else {
        ++failures_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(s.ok() ? 10 : 30));
    }
  }

  const std::string topic_;
  Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::atomic<int> failures_{0};
  std::vector<std::thread> threads_;
};

TEST(Crash, AckedMessagesSurviveRepeatedSigkill) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 3, {"crash:8"});
  const std::string wal = dir.sub("wal"), log = dir.sub("agent.log");
  auto agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap());
  Senders senders;
  senders.SetAddress(agent->address());
  senders.Start(4);
  std::mt19937 rng(std::random_device{}());
  auto restart = [&] {
    agent.reset(new AgentProcess(wal, log, kafka.bootstrap()));
    senders.SetAddress(agent->address());
  };
  auto kill9 = [&] {
    agent->process().Signal(SIGKILL);
    ASSERT_TRUE(agent->process().Wait(std::chrono::seconds(10)).has_value());
  };
  int kills = 0, kills_while_down = 0, kills_during_replay = 0;
  for (int cycle = 0; cycle < 12; ++cycle) {
    if (cycle == 3) {
      ASSERT_EQ(kafka.Command("broker down all"), "OK");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 1200));
    if (cycle == 3 || cycle == 4) {
      // Brokers are down: Sends must still have succeeded into the WAL.
      EXPECT_GT(agent->WalStats().entries(), 0u);
      ++kills_while_down;
    }
    kill9();
    ++kills;
    if (cycle == 4) {
      ASSERT_EQ(kafka.Command("broker up all"), "OK");
    }
    if (cycle == 7) {
      // Build a backlog with Kafka down, then kill the agent while it replays it.
      ASSERT_EQ(kafka.Command("broker down all"), "OK");
      restart();
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      kill9();
      ++kills;
      ASSERT_EQ(kafka.Command("broker up all"), "OK");
      restart();
      uint64_t pending = agent->WalStats().entries();
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
      EXPECT_GT(pending, 0u) << "the restart should find a backlog to replay";
      kill9();
      ++kills;
      ++kills_during_replay;
    }
    restart();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  senders.Stop();
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(120)));
  std::map<uint64_t, std::string> acked = senders.acked();
  auto records = kspool::testing::ReadTopic(kafka.bootstrap(), "crash", acked.size(),
                                            std::chrono::seconds(60));
  std::map<uint64_t, int> seen;
  std::map<uint64_t, std::string> value_of;
  for (const auto& r : records) {
    ++seen[r.seq];
    value_of[r.seq] = r.value;
  }
  size_t delivered = 0, duplicates = 0;
  for (const auto& [seq, value] : acked) {
    if (!seen.count(seq)) {
      ADD_FAILURE() << "acked seq " << seq << " (" << value << ") never reached Kafka";
      continue;
    }
    ++delivered;
    EXPECT_EQ(value_of[seq], value) << "seq " << seq;
  }
  for (const auto& [seq, n] : seen) duplicates += n - 1;
  std::printf("kills=%d (while brokers down: %d, during replay: %d) acked=%zu delivered=%zu "
              "duplicates=%zu failed sends=%d\n",
              kills, kills_while_down, kills_during_replay, acked.size(), delivered, duplicates,
              senders.failures());
  EXPECT_GE(kills, 10);
  EXPECT_GT(acked.size(), 1000u);
  EXPECT_EQ(delivered, acked.size());
}

TEST(Crash, KillsDuringDiscardsLoseNothingAndKeepTheLedger) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 3, {"storm:4"});
  const std::string wal = dir.sub("wal"), log = dir.sub("agent.log");
  const std::vector<std::string> args = {"--max-message-age", "1500ms", "--kafka-option",
                                         "reconnect.backoff.max.ms=200"};
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  auto agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  Senders senders("storm");
  senders.SetAddress(agent->address());
  senders.Start(2);
  std::mt19937 rng(std::random_device{}());
  int kills = 0;
  for (int cycle = 0; cycle < 8; ++cycle) {
    // Entries expire 1.5 s after they arrive: these kills land while discards run.
    std::this_thread::sleep_for(std::chrono::milliseconds(800 + rng() % 1500));
    if (cycle == 5) {
      ASSERT_EQ(kafka.Command("broker up all"), "OK");
    }
    agent->process().Signal(SIGKILL);
    ASSERT_TRUE(agent->process().Wait(std::chrono::seconds(10)).has_value());
    ++kills;
    agent.reset(new AgentProcess(wal, log, kafka.bootstrap(), args));
    senders.SetAddress(agent->address());
  }
  senders.Stop();
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(60)));
  agent->process().Signal(SIGTERM);
  ASSERT_TRUE(agent->process().Wait(std::chrono::seconds(20)).has_value());

  wal::Options o;
  o.dir = wal;
  auto w = std::move(wal::Wal::Open(o)).value();
  std::vector<wal::DeadLetter> dead;
  ASSERT_TRUE(w->ScanDeadLetters(0, 1 << 24, &dead).ok());
  std::map<uint64_t, std::string> dead_reason;
  for (const auto& d : dead) dead_reason[d.seq] = d.reason;
  wal::Stats stats = w->GetStats();
  std::map<std::string, wal::Counts> live;
  ASSERT_TRUE(w->CountLive(&live).ok());
  const wal::TopicStats& t = stats.topics["storm"];
  uint64_t discarded = 0;
  for (const auto& [reason, c] : t.discarded) discarded += c.count;
  EXPECT_EQ(t.accepted.count, t.delivered.count + discarded + live["storm"].count);
  EXPECT_EQ(discarded, dead.size()) << "every discard is in the dead letters";

  std::map<uint64_t, std::string> acked = senders.acked();
  auto records = kspool::testing::ReadTopic(kafka.bootstrap(), "storm", acked.size() - dead.size(),
                                            std::chrono::seconds(60));
  std::set<uint64_t> in_kafka;
  for (const auto& r : records) in_kafka.insert(r.seq);
  size_t delivered = 0, expired = 0;
  for (const auto& [seq, value] : acked) {
    bool k = in_kafka.count(seq), d = dead_reason.count(seq);
    EXPECT_TRUE(k || d) << "acked seq " << seq << " is neither in Kafka nor a dead letter";
    if (d) {
      EXPECT_EQ(dead_reason[seq], "expired");
    }
    delivered += k;
    expired += d && !k;
  }
  std::printf("kills=%d acked=%zu delivered=%zu expired=%zu (dead letters %zu)\n", kills,
              acked.size(), delivered, expired, dead.size());
  EXPECT_GT(expired, 0u) << "the test should have killed the agent around discards";
  EXPECT_GT(delivered, 0u);
}

}  // namespace
}  // namespace kspool
