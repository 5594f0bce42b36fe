// BrokersUpInStats: the brokers with a connection, read from librdkafka's statistics
// JSON without reading the topics that follow them.
#include "agent/kafka/kafka_stats.h"

#include <gtest/gtest.h>

#include <string>

namespace kspool::agent {
namespace {

std::optional<int> Scan(const std::string& json) {
  return BrokersUpInStats(json.data(), json.size());
}

const char kBrokers[] = R"({"name": "rdkafka#producer-1", "ts": 1, "msg_cnt": 0,
  "brokers": {
    "127.0.0.1:9092/bootstrap": {"name": "b", "nodeid": -1, "state": "UP", "rtt": {"min": 0}},
    "127.0.0.1:9093/1": {"nodeid": 1, "state": "UP", "int_latency": {"max": 5, "state": "x"},
                         "toppars": {"t-0": {"topic": "t", "partition": 0}}},
    "127.0.0.1:9094/2": {"nodeid": 2, "state": "DOWN", "req": {"Produce": 3}},
    "127.0.0.1:9095/3": {"state": "UP", "nodeid": 3, "window": [1, 2, {"state": "DOWN"}]}
  })";

TEST(KafkaStats, CountsBrokersUpWithANodeId) {
  EXPECT_EQ(Scan(std::string(kBrokers) + R"(, "topics": {"t": {"partitions": {}}}})"), 2);
}

TEST(KafkaStats, StopsAtTheEndOfTheBrokersObject) {
  // What follows "brokers" is never read: not even text that does not parse.
  EXPECT_EQ(Scan(std::string(kBrokers) + R"(, "topics": {"t": {{{ not json)"), 2);
}

TEST(KafkaStats, NoBrokerUpIsZero) {
  EXPECT_EQ(Scan(R"({"brokers": {"h:1/1": {"nodeid": 1, "state": "CONNECT"}}, "topics": {}})"), 0);
  EXPECT_EQ(Scan(R"({"brokers": {}, "topics": {}})"), 0);
}

TEST(KafkaStats, TextWithoutBrokersOrMalformedBeforeThemIsNothing) {
  EXPECT_EQ(Scan(R"({"name": "x", "topics": {}})"), std::nullopt);
  EXPECT_EQ(Scan(R"({"name": "x", "brokers": {"h:1/1": {"nodeid": 1, "state": )"), std::nullopt);
  EXPECT_EQ(Scan(""), std::nullopt);
}

}  // namespace
}  // namespace kspool::agent
