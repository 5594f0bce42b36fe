// A topic deleted and recreated with fewer partitions, end to end: a real agent process
// and a real kspool-devkafka cluster over TCP. librdkafka's mock cluster cannot delete
// a topic, so the cluster itself is replaced: kspool-devkafka is stopped and started
// again on the same broker ports (--broker-ports) with the topic made smaller. To the
// agent this is the same bootstrap whose topic now has fewer partitions, as after a
// deletion and recreation.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using namespace std::chrono_literals;
using kspool::testing::AgentProcess;
using kspool::testing::ConsumedRecord;
using kspool::testing::DevKafka;

// Kafka's default partitioner (murmur2, as the Java client), from librdkafka itself:
// where any other producer puts the key.
int32_t KeyPartition(const std::string& key, int32_t partitions) {
  return rd_kafka_msg_partitioner_murmur2(nullptr, key.data(), key.size(), partitions, nullptr,
                                          nullptr);
}

TEST(TopicRecreateE2E, ATopicRecreatedWithFewerPartitionsGetsItsWaitingKeyedEntriesByTheNewLayout) {
  constexpr int kOld = 4, kNew = 2, kKeys = 24, kPerKey = 3;
  const std::string topic = "recreated";
  kspool::testing::TempDir dir;
  auto first = std::make_unique<DevKafka>(dir.sub("kafka1"), 3,
                                          std::vector<std::string>{topic + ":" + std::to_string(kOld)});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), first->bootstrap());

  // The agent learns the topic's 4 partitions with one delivered message.
  {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_key("warm-up");
    m->set_value("warm-up");
    kspool::v1::SendResponse resp;
    ASSERT_TRUE(agent.Send(req, &resp).ok());
    ASSERT_TRUE(agent.WaitUntilDrained(20s)) << "the warm-up message was not delivered";
  }
  // Every partition loses its leader; keyed messages sent now wait in the WAL.
  for (int p = 0; p < kOld; ++p) {
    ASSERT_EQ(first->Command("leader " + topic + " " + std::to_string(p) + " none"), "OK");
  }
  std::this_thread::sleep_for(1500ms);  // the agent's metadata cache refreshes every second
  kspool::v1::SendRequest req;
  std::map<std::string, std::string> key_of;  // value -> key
  for (int round = 0; round < kPerKey; ++round) {
    for (int k = 0; k < kKeys; ++k) {
      auto* m = req.add_messages();
      m->set_topic(topic);
      m->set_key("key-" + std::to_string(k));
      m->set_value("v-" + std::to_string(round) + "-" + std::to_string(k));
      key_of[m->value()] = m->key();
    }
  }
  kspool::v1::SendResponse resp;
  ASSERT_TRUE(agent.Send(req, &resp).ok());
  ASSERT_EQ(resp.sequence_size(), kKeys * kPerKey);
  std::this_thread::sleep_for(1500ms);
  ASSERT_EQ(agent.WalStats().entries(), uint64_t{kKeys * kPerKey}) << "they did not wait";
  const int64_t commit_before = agent.CommitPoint().commit_point_ms();
  EXPECT_LT(commit_before, resp.receive_time_ms());

  // The topic comes back with 2 partitions, every one with a leader, on the same ports.
  const std::string bootstrap = first->bootstrap();
  const std::string ports = first->broker_ports();
  first->Stop();
  first.reset();
  DevKafka second(dir.sub("kafka2"), 3, {topic + ":" + std::to_string(kNew)},
                  {"--broker-ports", ports});
  ASSERT_EQ(second.bootstrap(), bootstrap);
  ASSERT_TRUE(agent.WaitUntilDrained(30s))
      << "entries left: " << agent.WalStats().entries() << " (see " << dir.sub("agent.log") << ")";

  // Every keyed message reached the recreated topic, none lost, each on its key's
  // partition of the new layout, each key's messages in the order they were sent.
  const std::vector<ConsumedRecord> records =
      kspool::testing::ReadTopic(second.bootstrap(), topic, kKeys * kPerKey, 20s);
  std::set<std::string> values;
  std::map<std::string, uint64_t> last_seq;  // key -> seq of its last record so far
  std::map<int32_t, int> per_partition;
  for (const ConsumedRecord& r : records) {  // in offset order per partition
    ASSERT_TRUE(r.key.has_value());
    ASSERT_TRUE(key_of.count(r.value)) << r.value;
    EXPECT_EQ(*r.key, key_of[r.value]);
    EXPECT_EQ(r.partition, KeyPartition(*r.key, kNew)) << *r.key;
    EXPECT_GT(r.seq, last_seq[*r.key]) << *r.key << " out of order";
    last_seq[*r.key] = r.seq;
    values.insert(r.value);
    ++per_partition[r.partition];
  }
  EXPECT_EQ(values.size(), key_of.size());
  EXPECT_EQ(records.size(), key_of.size()) << "duplicates";
  EXPECT_EQ(per_partition.size(), size_t{kNew});  // both partitions got keys
  // The commit point moved past every message sent.
  EXPECT_GE(agent.CommitPoint().commit_point_ms(), resp.receive_time_ms());
  EXPECT_EQ(agent.WalStats().entries(), 0u);
}

}  // namespace
}  // namespace kspool
