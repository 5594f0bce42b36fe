// Reconciliation at start, end to end: a real agent process on kspool-devkafka, killed
// with SIGKILL, restarted on its WAL; a consumer over every partition then counts each
// acknowledged message's copies (exactly one each), and GetDeliveryStatus must name the
// partition and offset where the consumer found it. "Settle lost" is made on purpose by
// putting back a copy of the WAL taken before the messages were delivered: every entry
// is then in doubt and in Kafka.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "agent/drain/drain_lanes.h"
#include "base/mutex.h"
#include "tests/integration/exactly_once.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CheckExactlyOnce;
using kspool::testing::DevKafka;
using kspool::testing::ReadCopies;
using kspool::testing::ReadLog;
using kspool::testing::ReconcileLines;
namespace fs = std::filesystem;

// Sends `req` (every message to `topic`); what the agent acknowledged, by sequence number.
std::map<uint64_t, std::string> SendAll(AgentProcess& agent, const std::string& topic,
                                        const kspool::v1::SendRequest& req) {
  kspool::v1::SendResponse resp;
  grpc::Status s = agent.Send(req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::map<uint64_t, std::string> acked;
  for (int i = 0; s.ok() && i < resp.sequence_size(); ++i) acked[resp.sequence(i)] = topic;
  return acked;
}

// Sends `n` messages: to `topic`, at `partition` (-1: by key, or any without one).
std::map<uint64_t, std::string> SendSome(AgentProcess& agent, const std::string& topic, int n,
                                         int32_t partition, bool keyed, size_t value_bytes = 16) {
  kspool::v1::SendRequest req;
  for (int i = 0; i < n; ++i) {
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value(std::string(value_bytes, 'a' + static_cast<char>(i % 26)));
    if (partition >= 0) m->set_partition(partition);
    if (keyed) m->set_key("key-" + std::to_string(i % 7));
  }
  return SendAll(agent, topic, req);
}

// n messages, keyed by keys whose partition is `partition` of `partitions` (the Java
// client's partitioner, as the agent routes them), with no explicit partition.
std::map<uint64_t, std::string> SendKeyedFor(AgentProcess& agent, const std::string& topic, int n,
                                             int32_t partition, int partitions) {
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 5; ++i) {
    std::string k = "key-" + std::to_string(i);
    if (agent::KeyPartition(k, partitions) == partition) keys.push_back(k);
  }
  kspool::v1::SendRequest req;
  for (int i = 0; i < n; ++i) {
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value("keyed-" + std::to_string(i));
    m->set_key(keys[static_cast<size_t>(i) % keys.size()]);
  }
  return SendAll(agent, topic, req);
}

class ReconcileE2E : public ::testing::Test {
 protected:
  void Kill(std::unique_ptr<AgentProcess>& agent) {
    agent->process().Signal(SIGKILL);
    ASSERT_TRUE(agent->process().Wait(std::chrono::seconds(10)).has_value());
    agent.reset();
  }
  // One message delivered and settled on each partition, so that each has a settled
  // watermark to be read from: kspool-devkafka (librdkafka's mock) answers a ListOffsets
  // by time with "no record", so a read by time finds nothing there.
  std::map<uint64_t, std::string> WarmUp(AgentProcess& agent, const std::string& topic,
                                         int partitions) {
    std::map<uint64_t, std::string> acked;
    for (int p = 0; p < partitions; ++p) acked.merge(SendSome(agent, topic, 1, p, false));
    EXPECT_TRUE(agent.WaitUntilDrained(std::chrono::seconds(10)));
    return acked;
  }
  // A WAL whose entries are all in Kafka, their settles lost: `before` (taken while the
  // brokers were down) put back after an agent delivered everything.
  void PutBack(const std::string& before) {
    fs::remove_all(wal_);
    fs::copy(before, wal_, fs::copy_options::recursive);
  }
  kspool::testing::TempDir dir_;
  const std::string wal_ = dir_.sub("wal");
  const std::string log_ = dir_.sub("agent.log");
};

// Clients keep sending to two topics (keyed and unkeyed) while the agent is killed at
// random moments: after the last restart every acked message is in Kafka exactly once.
TEST_F(ReconcileE2E, NoDuplicatesAfterRepeatedSigkillUnderLoad) {
  DevKafka kafka(dir_.path(), 3, {"ra:4", "rb:3"});
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
  Mutex mu;
  std::string address = agent->address();
  std::map<uint64_t, std::string> acked;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(c);
      for (int n = 0; !stop; ++n) {
        std::string to;
        {
          MutexLock l(&mu);
          to = address;
        }
        auto stub = kspool::v1::Spool::NewStub(grpc::CreateChannel(to, grpc::InsecureChannelCredentials()));
        kspool::v1::SendRequest req;
        for (int i = 0; i < 20; ++i) {
          auto* m = req.add_messages();
          m->set_topic(i % 2 ? "ra" : "rb");
          m->set_value("c" + std::to_string(c) + "-" + std::to_string(n) + "-" + std::to_string(i));
          if (i % 3 == 0) m->set_key("k" + std::to_string(rng() % 16));
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
        kspool::v1::SendResponse resp;
        if (stub->Send(&ctx, req, &resp).ok()) {
          MutexLock l(&mu);
          for (int i = 0; i < resp.sequence_size(); ++i) {
            acked[resp.sequence(i)] = req.messages(i).topic();
          }
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  std::mt19937 rng(std::random_device{}());
  const int kKills = 5;
  for (int k = 0; k < kKills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
    Kill(agent);
    agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
    MutexLock l(&mu);
    address = agent->address();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : clients) t.join();
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(20)));
  std::map<uint64_t, std::string> done;
  {
    MutexLock l(&mu);
    done = acked;
  }
  auto copies = ReadCopies(kafka.bootstrap(), {"ra", "rb"}, done.size());
  const size_t duplicates = CheckExactlyOnce(*agent, done, copies);
  EXPECT_EQ(duplicates, 0u) << ReconcileLines(log_);
  std::string log = ReadLog(log_);
  size_t reconciled = 0, found = 0;
  for (size_t at = 0; (at = log.find("reconciled in", at)) != std::string::npos; ++at) ++reconciled;
  const std::string kFound = " copies found;";
  for (size_t at = 0; (at = log.find(kFound, at)) != std::string::npos; ++at) {
    const size_t from = log.rfind(' ', at - 1) + 1;
    found += std::stoul(log.substr(from, at - from));
  }
  // How long the in-doubt entries of a topic waited (the restart time reconciliation adds).
  long longest_ms = 0;
  const std::string kIn = "reconciled in ";
  for (size_t at = 0; (at = log.find(kIn, at)) != std::string::npos; ++at) {
    longest_ms = std::max(longest_ms, std::stol(log.substr(at + kIn.size())));
  }
  std::printf("kills=%d acked=%zu duplicates=%zu topic reconciliations=%zu copies found=%zu "
              "longest hold=%ld ms\n",
              kKills, done.size(), duplicates, reconciled, found, longest_ms);
  EXPECT_GT(done.size(), 1000u);
}

// Every entry in Kafka, its settle lost; one partition without a leader at the restart:
// the other topic and partitions are reconciled (nothing produced again) and new
// messages delivered while it waits; its entries are reconciled once it has a leader.
// Keyed messages of the other partition do not wait for it: the routing bounds say the
// topic always had 2 partitions, so none of them can be there.
TEST_F(ReconcileE2E, LeaderlessPartitionHoldsOnlyItsOwnEntries) {
  DevKafka kafka(dir_.path(), 3, {"la:2", "lb:2"});
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
  std::map<uint64_t, std::string> acked = WarmUp(*agent, "la", 2);
  acked.merge(WarmUp(*agent, "lb", 2));
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  acked.merge(SendSome(*agent, "la", 30, 0, true));
  acked.merge(SendSome(*agent, "la", 30, 1, false));
  acked.merge(SendKeyedFor(*agent, "la", 30, 1, 2));
  acked.merge(SendSome(*agent, "lb", 30, -1, true));
  acked.merge(SendSome(*agent, "lb", 30, -1, false));
  Kill(agent);
  const std::string before = dir_.sub("wal-before");
  fs::copy(wal_, before, fs::copy_options::recursive);
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(20)));
  Kill(agent);
  PutBack(before);

  ASSERT_EQ(kafka.Command("leader la 0 none"), "OK");
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), std::vector<std::string>{"--log-level", "debug"});
  std::map<uint64_t, std::string> fresh = SendSome(*agent, "lb", 20, -1, false);
  // Only la's partition 0 waits: 30 entries.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (agent->WalStats().entries() > 30 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(agent->WalStats().entries(), 30u);
  const std::string status = kspool::testing::HttpGet(agent->http_address(), "/status").body;
  EXPECT_NE(status.find("\"in_progress\": true"), std::string::npos) << status;
  ASSERT_EQ(kafka.Command("leader la 0 1"), "OK");
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(20)));
  acked.merge(fresh);
  auto copies = ReadCopies(kafka.bootstrap(), {"la", "lb"}, acked.size());
  EXPECT_EQ(CheckExactlyOnce(*agent, acked, copies), 0u) << ReconcileLines(log_);
  EXPECT_EQ(kspool::testing::ScrapeMetrics(agent->http_address())["kspool_reconcile_found_total"],
            150);
}

// Keyed messages in the WAL at a restart that Kafka does not hold, their topic's other
// partition without a leader: they go once their own partition is read, because the
// routing bounds say the topic had 2 partitions whenever they could have been produced.
TEST_F(ReconcileE2E, KeyedEntriesNotInKafkaGoOnceTheirOwnPartitionIsRead) {
  DevKafka kafka(dir_.path(), 3, {"lc:2"});
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
  std::map<uint64_t, std::string> acked = WarmUp(*agent, "lc", 2);
  ASSERT_EQ(kafka.Command("leader lc 1 none"), "OK");
  acked.merge(SendKeyedFor(*agent, "lc", 20, 1, 2));  // wait for partition 1's leader
  Kill(agent);
  ASSERT_EQ(kafka.Command("leader lc 1 1"), "OK");
  ASSERT_EQ(kafka.Command("leader lc 0 none"), "OK");
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap());
  // Partition 0 is never read meanwhile, and nothing of lc can be there. (30 s: under
  // ASan on a machine running three other jobs, 15 s ran out once.)
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(30))) << ReconcileLines(log_);
  const std::string status = kspool::testing::HttpGet(agent->http_address(), "/status").body;
  EXPECT_NE(status.find("\"in_progress\": true"), std::string::npos) << status;
  ASSERT_EQ(kafka.Command("leader lc 0 1"), "OK");
  auto copies = ReadCopies(kafka.bootstrap(), {"lc"}, acked.size());
  EXPECT_EQ(CheckExactlyOnce(*agent, acked, copies), 0u) << ReconcileLines(log_);
}

// A byte bound smaller than what lies above the watermark: the read ends early, counted
// and logged, and the entries not found are produced (duplicates, never a loss).
TEST_F(ReconcileE2E, ByteBoundEndsTheReadAndEntriesAreDelivered) {
  DevKafka kafka(dir_.path(), 3, {"big:1"});
  const std::vector<std::string> args = {"--reconcile-max-bytes", "4KiB"};
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), args);
  std::map<uint64_t, std::string> acked = WarmUp(*agent, "big", 1);
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  acked.merge(SendSome(*agent, "big", 100, 0, false, 200));
  Kill(agent);
  const std::string before = dir_.sub("wal-before");
  fs::copy(wal_, before, fs::copy_options::recursive);
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), args);
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(20)));
  Kill(agent);
  PutBack(before);
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), args);
  ASSERT_TRUE(agent->WaitUntilDrained(std::chrono::seconds(20)));
  auto metrics = kspool::testing::ScrapeMetrics(agent->http_address());
  EXPECT_EQ(metrics["kspool_reconcile_ended_early_total{reason=\"max_bytes\"}"], 1);
  const double found = metrics["kspool_reconcile_found_total"];
  EXPECT_GT(found, 0);
  EXPECT_LT(found, 100);
  EXPECT_NE(ReadLog(log_).find("(max_bytes)"), std::string::npos);
  auto copies = ReadCopies(kafka.bootstrap(), {"big"}, acked.size() * 2);
  size_t lost = 0, copies_total = 0;
  for (const auto& [seq, t] : acked) {
    lost += copies.count(seq) ? 0 : 1;
    copies_total += copies.count(seq) ? copies[seq].size() : 0;
  }
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(copies_total, 201u - static_cast<size_t>(found)) << "found ones are not produced again";
}

}  // namespace
}  // namespace kspool
