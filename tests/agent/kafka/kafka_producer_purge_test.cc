// KafkaProducer::PurgeQueued against librdkafka's mock cluster in process: only the named
// partitions' queued messages come back; the others stay queued and are delivered, in
// their order.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <thread>

#include "agent/kafka/kafka_producer.h"

namespace kspool::agent {
namespace {

using namespace std::chrono_literals;

TEST(KafkaProducerPurge, PurgeQueuedTakesBackOnlyTheNamedPartitionsMessages) {
  char err[256];
  rd_kafka_t* mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof(err));
  ASSERT_NE(mock_rk, nullptr) << err;
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(mock_rk, 1);
  ASSERT_NE(cluster, nullptr);
  ASSERT_EQ(rd_kafka_mock_topic_create(cluster, "t", 2, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  {
    ProducerConfig pc;
    pc.brokers = rd_kafka_mock_cluster_bootstraps(cluster);
    pc.options = {"linger.ms=1500"};  // the messages wait in the client's queues
    pc.agent_id = "0123456789abcdef";
    auto p = KafkaProducer::Create(pc);
    ASSERT_TRUE(p.ok()) << p.status();
    std::vector<wal::Entry> entries(6);
    for (size_t i = 0; i < entries.size(); ++i) {
      entries[i].seq = i + 1;
      entries[i].record.topic = "t";
      entries[i].record.value = "v" + std::to_string(i);
      entries[i].record.receive_time_ms = 1;
      ASSERT_EQ((*p)->Produce(entries[i], i < 3 ? 0 : 1).result, DeliveryResult::kQueued);
    }
    std::vector<DeliveryReport> reports;
    (*p)->Poll(300, &reports);  // the topic's metadata arrives meanwhile
    (*p)->PurgeQueued({{"t", 1}});
    for (auto deadline = std::chrono::steady_clock::now() + 15s;
         reports.size() < entries.size() && std::chrono::steady_clock::now() < deadline;) {
      (*p)->Poll(100, &reports);
    }
    ASSERT_EQ(reports.size(), entries.size());
    std::vector<uint64_t> delivered;
    for (const DeliveryReport& r : reports) {
      if (r.seq <= 3) {
        EXPECT_EQ(r.result, DeliveryResult::kDelivered) << r.seq << ": " << r.error;
        EXPECT_EQ(r.partition, 0);
        delivered.push_back(r.seq);
        EXPECT_EQ(r.offset, static_cast<int64_t>(r.seq - 1));  // in their order
      } else {
        EXPECT_EQ(r.result, DeliveryResult::kPurged) << r.seq << ": " << r.error;
      }
    }
    EXPECT_EQ(delivered.size(), 3u);
    EXPECT_EQ((*p)->OutstandingMessages(), 0);
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(mock_rk);
}

}  // namespace
}  // namespace kspool::agent
