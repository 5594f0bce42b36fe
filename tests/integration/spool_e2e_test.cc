// End to end over real sockets: a kspool-agent process, a kspool-devkafka cluster, gRPC
// over loopback, and librdkafka's consumer reading what arrived.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "wal/wal.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ConsumedRecord;
using kspool::testing::DevKafka;
using kspool::testing::ReadTopic;
using kspool::testing::WaitUntil;


class SpoolE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 3, std::vector<std::string>{"events:4"});
    StartAgent();
  }
  void StartAgent() {
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), dir_.sub("agent.log"),
                                            kafka_->bootstrap());
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(SpoolE2E, EveryAckedMessageArrivesWithItsHeaders) {
  std::map<uint64_t, std::string> acked;  // seq -> value
  for (int batch = 0; batch < 20; ++batch) {
    kspool::v1::SendRequest req;
    for (int i = 0; i < 50; ++i) {
      auto* m = req.add_messages();
      m->set_topic("events");
      m->set_value("b" + std::to_string(batch) + "-m" + std::to_string(i));
      if (i % 2 == 0) m->set_key("key-" + std::to_string(i % 10));
      auto* h = m->add_headers();
      h->set_key("trace");
      h->set_value("t" + std::to_string(i));
      auto* h2 = m->add_headers();  // Kafka allows a header key twice
      h2->set_key("trace");
      h2->set_value("again");
    }
    kspool::v1::SendResponse resp;
    grpc::Status s = agent_->Send(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.sequence_size(), 50);
    for (int i = 0; i < 50; ++i) acked[resp.sequence(i)] = req.messages(i).value();
  }
  ASSERT_TRUE(agent_->WaitUntilDrained(std::chrono::seconds(30)));
  const std::string agent_id = agent_->WalStats().agent_id();

  std::vector<ConsumedRecord> got =
      ReadTopic(kafka_->bootstrap(), "events", acked.size(), std::chrono::seconds(30));
  std::map<uint64_t, const ConsumedRecord*> by_seq;
  std::map<std::string, int32_t> partition_of_key;
  for (const ConsumedRecord& r : got) {
    EXPECT_EQ(r.agent, agent_id);
    by_seq[r.seq] = &r;
    if (r.key) {
      auto [it, fresh] = partition_of_key.emplace(*r.key, r.partition);
      EXPECT_EQ(it->second, r.partition) << "a key must always land in one partition";
    }
  }
  for (const auto& [seq, value] : acked) {
    ASSERT_TRUE(by_seq.count(seq)) << "acked seq " << seq << " not in Kafka";
    const ConsumedRecord& r = *by_seq[seq];
    EXPECT_EQ(r.value, value);
    ASSERT_EQ(r.headers.size(), 4u);
    EXPECT_EQ(r.headers[0].first, "kspool.agent");
    EXPECT_EQ(r.headers[1], (std::pair<std::string, std::string>{"kspool.seq", std::to_string(seq)}));
    EXPECT_EQ(r.headers[2].first, "trace");
    EXPECT_EQ(r.headers[3], (std::pair<std::string, std::string>{"trace", "again"}));
  }
  std::printf("acked=%zu consumed=%zu\n", acked.size(), got.size());
}

TEST_F(SpoolE2E, CommitPointPassesTheLastDeliveredAndTracksNowWhenEmpty) {
  kspool::v1::SendRequest req;
  for (int i = 0; i < 10; ++i) {
    auto* m = req.add_messages();
    m->set_topic("events");
    m->set_value("v" + std::to_string(i));
  }
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent_->Send(req, &resp).ok());
  ASSERT_TRUE(agent_->WaitUntilDrained(std::chrono::seconds(30)));
  kspool::v1::GetCommitPointResponse cp;
  ASSERT_TRUE(WaitUntil([&] {
    cp = agent_->CommitPoint();
    return cp.commit_point_ms() >= resp.receive_time_ms();
  }, std::chrono::seconds(10))) << "commit point " << cp.commit_point_ms() << ", message received at "
                                << resp.receive_time_ms();
  // Empty WAL: the commit point is the current time (updated every 50 ms here).
  EXPECT_LE(cp.now_ms() - cp.commit_point_ms(), 1000);
  EXPECT_LE(cp.commit_point_ms(), cp.now_ms());
  ASSERT_EQ(cp.topics_size(), 1);
  EXPECT_EQ(cp.topics(0).topic(), "events");
  EXPECT_GE(cp.topics(0).commit_point_ms(), resp.receive_time_ms());
}

TEST_F(SpoolE2E, CommitPointHoldsBelowUndeliveredMessagesWhileKafkaIsDown) {
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("events");
  m->set_value("waits");
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent_->Send(req, &resp).ok()) << "Sends succeed into the WAL with Kafka down";
  // The commit point reaches the message's receive time - 1 and stays there while the
  // agent keeps recomputing it (every 50 ms) for a second.
  kspool::v1::GetCommitPointResponse cp;
  ASSERT_TRUE(WaitUntil([&] {
    cp = agent_->CommitPoint();
    EXPECT_LT(cp.commit_point_ms(), resp.receive_time_ms());
    return cp.commit_point_ms() == resp.receive_time_ms() - 1 &&
           cp.now_ms() >= resp.receive_time_ms() + 1000;
  }, std::chrono::seconds(10))) << "commit point " << cp.commit_point_ms() << ", message received at "
                                << resp.receive_time_ms();
  EXPECT_EQ(agent_->WalStats().entries(), 1u);

  ASSERT_EQ(kafka_->Command("broker up all"), "OK");
  ASSERT_TRUE(agent_->WaitUntilDrained(std::chrono::seconds(60)));
  EXPECT_TRUE(WaitUntil([&] { return agent_->CommitPoint().commit_point_ms() >= resp.receive_time_ms(); },
                        std::chrono::seconds(10)));
  auto got = ReadTopic(kafka_->bootstrap(), "events", 1, std::chrono::seconds(20));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "waits");
}

TEST_F(SpoolE2E, RestartContinuesSequenceNumbersAndCommitPoint) {
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("events");
  m->set_value("one");
  kspool::v1::SendResponse first;
  ASSERT_TRUE(agent_->Send(req, &first).ok());
  ASSERT_TRUE(agent_->WaitUntilDrained(std::chrono::seconds(30)));
  int64_t cp_before = 0;
  ASSERT_TRUE(WaitUntil([&] {
    cp_before = agent_->CommitPoint().commit_point_ms();
    return cp_before >= first.receive_time_ms();
  }, std::chrono::seconds(10)));
  agent_->process().Signal(SIGTERM);
  auto st = agent_->process().Wait(std::chrono::seconds(20));
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  StartAgent();
  EXPECT_GE(agent_->CommitPoint().commit_point_ms(), cp_before);
  kspool::v1::SendResponse second;
  ASSERT_TRUE(agent_->Send(req, &second).ok());
  EXPECT_GT(second.sequence(0), first.sequence(0));
}

// Before: about 10 s, the 5 s grace waited out and then a metadata request's 5 s
// timeout on the unreachable cluster.
TEST_F(SpoolE2E, StopIsPromptWhileKafkaIsUnreachableAndKeepsWhatWasNotDelivered) {
  auto brokers_up = [&] {
    return kspool::testing::ScrapeMetrics(agent_->http_address())["kspool_kafka_brokers_up"];
  };
  ASSERT_TRUE(WaitUntil([&] { return brokers_up() > 0; }, std::chrono::seconds(20)));
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  ASSERT_TRUE(WaitUntil([&] { return brokers_up() == 0; }, std::chrono::seconds(20)));
  kspool::v1::SendRequest req;
  for (int i = 0; i < 10; ++i) {
    auto* m = req.add_messages();
    m->set_topic("events");
    m->set_value("kept-" + std::to_string(i));
  }
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent_->Send(req, &resp).ok());
  // The drain hands them to the producer and asks for the topic's partitions, which the
  // cluster cannot answer.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto start = std::chrono::steady_clock::now();
  agent_->process().Signal(SIGTERM);
  auto st = agent_->process().Wait(std::chrono::seconds(30));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  EXPECT_LT(took, std::chrono::milliseconds(3500))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  std::ifstream log_file(dir_.sub("agent.log"));
  const std::string log((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("no Kafka broker is up; not waiting for 10 messages in flight"),
            std::string::npos)
      << "the shortened stop is logged";
  wal::Options o;
  o.dir = dir_.sub("wal");
  auto w = wal::Wal::Open(o);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->GetStats().entries, 10u) << "what Kafka never acknowledged stays";
}

TEST_F(SpoolE2E, BadRequestNamesTheMessageAndFieldAndWritesNothing) {
  kspool::v1::SendRequest req;
  req.add_messages()->set_topic("events");
  req.add_messages()->set_topic("bad topic!");
  kspool::v1::SendResponse resp;
  grpc::Status s = agent_->Send(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("message 1: topic"), std::string::npos) << s.error_message();
  auto stats = agent_->WalStats();
  EXPECT_EQ(stats.next_sequence(), 1u) << "nothing of a rejected request is written";
}

}  // namespace
}  // namespace kspool
