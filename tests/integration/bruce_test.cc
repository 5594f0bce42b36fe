// Bruce/Dory-format input end to end: a real kspool-agent with its three Bruce sockets
// (UNIX datagram, UNIX stream, loopback TCP), kspool-devkafka, a sender written here
// from the format (tests/support/bruce_format.h) and librdkafka's consumer.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/bruce_format.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "wal/wal.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::AnyPartition;
using kspool::testing::ConnectTcp;
using kspool::testing::ConnectUnix;
using kspool::testing::ConsumedRecord;
using kspool::testing::DevKafka;
using kspool::testing::PartitionKey;
using kspool::testing::ReadTopic;
using kspool::testing::SendAll;
using kspool::testing::WaitUntil;
using namespace std::chrono_literals;

constexpr int kPartitions = 4;
constexpr int64_t kTs = 1'700'000'000'000;

class Bruce : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 1,
                                        std::vector<std::string>{"bruce:4", "good:2", "crash:8"});
    StartAgent();
  }
  void StartAgent() {
    agent_ = std::make_unique<AgentProcess>(
        dir_.sub("wal"), dir_.sub("agent.log"), kafka_->bootstrap(),
        std::vector<std::string>{"--bruce-datagram-socket", dgram_path(), "--bruce-stream-socket",
                                 stream_path(), "--bruce-tcp", "127.0.0.1:0", "--kafka-option",
                                 "reconnect.backoff.max.ms=200"});
    const std::string& line = agent_->ready_line();
    const size_t at = line.find("bruce_tcp=");
    ASSERT_NE(at, std::string::npos) << line;
    tcp_ = line.substr(at + 10, line.find(' ', at + 10) - (at + 10));
  }
  std::string dgram_path() const { return dir_.sub("bruce.dgram"); }
  std::string stream_path() const { return dir_.sub("bruce.stream"); }
  // A connected socket of transport `t`: 0 datagram, 1 UNIX stream, 2 TCP.
  int Connect(int t) {
    if (t == 0) return ConnectUnix(dgram_path(), SOCK_DGRAM);
    if (t == 1) return ConnectUnix(stream_path(), SOCK_STREAM);
    return ConnectTcp(tcp_);
  }
  double Metric(const std::string& series) {
    auto m = kspool::testing::ScrapeMetrics(agent_->http_address());
    auto it = m.find(series);
    return it == m.end() ? -1 : it->second;
  }
  std::map<std::string, ConsumedRecord> ByValue(const std::string& topic, size_t n) {
    std::map<std::string, ConsumedRecord> out;
    for (ConsumedRecord& r : ReadTopic(kafka_->bootstrap(), topic, n, 30s)) {
      out[r.value] = std::move(r);
    }
    return out;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
  std::string tcp_;
};

TEST_F(Bruce, EveryTransportDeliversBothMessageKindsWithKeyValueTimestampAndPartition) {
  struct Sent {
    std::string key;
    int64_t ts;
    int partition;  // -1: any
  };
  std::map<std::string, Sent> sent;
  const std::vector<int32_t> pkeys = {0, 1, 2, 3, 5, 6, -1, -2, INT32_MIN, INT32_MAX, 1000003};
  for (int t = 0; t < 3; ++t) {
    const int fd = Connect(t);
    for (int i = 0; i < 10; ++i) {
      const std::string v = "any-" + std::to_string(t) + "-" + std::to_string(i);
      const std::string key = i % 2 ? "key" + std::to_string(i) : "";
      SendAll(fd, AnyPartition("bruce", kTs + i, key, v));
      sent[v] = {key, kTs + i, -1};
    }
    for (size_t i = 0; i < pkeys.size(); ++i) {
      const std::string v = "pk-" + std::to_string(t) + "-" + std::to_string(i);
      SendAll(fd, PartitionKey(pkeys[i], "bruce", kTs + 100 + i, "k", v));
      sent[v] = {"k", kTs + 100 + static_cast<int64_t>(i),
                 static_cast<int>(static_cast<uint32_t>(pkeys[i]) % kPartitions)};
    }
    close(fd);
  }
  auto got = ByValue("bruce", sent.size());
  for (const auto& [v, s] : sent) {
    auto it = got.find(v);
    ASSERT_NE(it, got.end()) << v << " not in Kafka";
    const ConsumedRecord& r = it->second;
    if (s.key.empty()) {
      EXPECT_FALSE(r.key.has_value()) << v;
    } else {
      EXPECT_EQ(r.key, s.key) << v;
    }
    EXPECT_EQ(r.timestamp_ms, s.ts) << v;
    if (s.partition >= 0) {
      EXPECT_EQ(r.partition, s.partition) << v;
    }
    EXPECT_GT(r.seq, 0u) << "kspool.seq header";
    EXPECT_FALSE(r.agent.empty()) << "kspool.agent header";
  }
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_EQ(Metric("kspool_bruce_messages_total{transport=\"datagram\"}"), 21);
  EXPECT_EQ(Metric("kspool_bruce_messages_total{transport=\"stream\"}"), 21);
  EXPECT_EQ(Metric("kspool_bruce_messages_total{transport=\"tcp\"}"), 21);
}

TEST_F(Bruce, EachKindOfBadInputIsCountedUnderItsReasonAndTheGoodAroundItIsDelivered) {
  int good = 0;
  auto good_msg = [&] { return AnyPartition("good", kTs, "", "good-" + std::to_string(good++)); };
  using kspool::testing::BruceFields;
  using kspool::testing::BruceMessageBytes;
  const int d = Connect(0);
  SendAll(d, good_msg());
  SendAll(d,
          BruceMessageBytes({256, 0, 1, std::nullopt, "good", kTs, "", "flags", {}}));  // malformed
  SendAll(d, good_msg());
  SendAll(d, BruceMessageBytes({300, 0, 0, std::nullopt, "good", kTs, "", "key", {}}));
  SendAll(d, good_msg());
  SendAll(d, BruceMessageBytes({257, 1, 0, 3, "good", kTs, "", "version", {}}));
  SendAll(d, good_msg());
  SendAll(d, AnyPartition("bad topic!", kTs, "", "topic"));
  SendAll(d, good_msg());
  SendAll(d, AnyPartition("good", kTs, "", std::string(70000, 'x')));  // > 64 KiB datagram
  SendAll(d, good_msg());
  close(d);
  // Streams: a good message, then half of one and the end (unclean), on each transport;
  // then a Size beyond 2 MiB, which closes the connection.
  for (int t : {1, 2}) {
    int s = Connect(t);
    const std::string half = AnyPartition("good", kTs, "", "never-finished");
    SendAll(s, good_msg() + half.substr(0, half.size() / 2));
    close(s);
    s = Connect(t);
    std::string huge;
    kspool::testing::PutBE(&huge, (2u << 20) + 1, 4);
    SendAll(s, good_msg() + huge + std::string(100, 'h'));
    close(s);
  }
  auto got = ByValue("good", static_cast<size_t>(good));
  for (int i = 0; i < good; ++i) EXPECT_EQ(got.count("good-" + std::to_string(i)), 1u) << i;
  EXPECT_EQ(got.size(), static_cast<size_t>(good)) << "nothing bad was delivered";
  const std::map<std::string, double> want = {
      {"malformed", 1}, {"unsupported_api_key", 1}, {"unsupported_version", 1}, {"bad_topic", 1},
      {"too_long", 3},  {"unclean_disconnect", 2}};
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Metric("kspool_bruce_rejected_total{reason=\"unclean_disconnect\"}") == 2 &&
               Metric("kspool_bruce_rejected_total{reason=\"too_long\"}") == 3;
      },
      10s));
  for (const auto& [reason, n] : want) {
    EXPECT_EQ(Metric("kspool_bruce_rejected_total{reason=\"" + reason + "\"}"), n) << reason;
  }
  // The discard report lists the latest refusals with their first bytes.
  auto page = kspool::testing::HttpGet(agent_->http_address(), "/discards");
  ASSERT_EQ(page.status, 200);
  nlohmann::json j = nlohmann::json::parse(page.body);
  EXPECT_EQ(j["bruce_rejected"]["counts"]["too_long"], 3);
  std::set<std::string> reasons;
  for (const auto& r : j["bruce_rejected"]["recent"]) {
    reasons.insert(r["reason"].get<std::string>());
    EXPECT_LE(r["first_bytes_base64"].get<std::string>().size(), (256u + 2) / 3 * 4);
  }
  EXPECT_EQ(reasons.size(), want.size());
}

TEST_F(Bruce, AfterASigkillDuringADatagramLoadEveryCommittedMessageReachesKafka) {
  constexpr int kSenders = 2, kPerSender = 15000;
  std::atomic<int> sent{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> senders;
  for (int c = 0; c < kSenders; ++c) {
    senders.emplace_back([&, c] {
      const int fd = Connect(0);
      for (int i = 0; i < kPerSender && !stop; ++i) {
        const std::string v = "c" + std::to_string(c) + "-" + std::to_string(i);
        if (send(fd, AnyPartition("crash", kTs, "", v).data(),
                 AnyPartition("crash", kTs, "", v).size(), MSG_NOSIGNAL) < 0) {
          break;  // the agent is gone
        }
        ++sent;
      }
      close(fd);
    });
  }
  // Kill it in the middle of the load: some committed, more still coming.
  ASSERT_TRUE(WaitUntil(
      [&] { return Metric("kspool_messages_received_total{topic=\"crash\"}") >= 5000; }, 20s, 5ms));
  agent_->process().Signal(SIGKILL);
  agent_->process().Wait(10s);
  stop = true;
  for (auto& t : senders) t.join();
  // What the WAL committed before the kill (read-only: nothing is written).
  uint64_t committed = 0;
  {
    wal::Options o;
    o.dir = dir_.sub("wal");
    o.read_only = true;
    auto w = wal::Wal::Open(o);
    ASSERT_TRUE(w.ok()) << w.status();
    committed = (*w)->GetStats().topics["crash"].accepted.count;
  }
  std::cout << "sent " << sent.load() << " datagrams, " << committed
            << " committed before the SIGKILL\n";
  ASSERT_GE(committed, 5000u);
  ASSERT_LE(committed, static_cast<uint64_t>(sent.load()));
  StartAgent();  // the socket file the killed agent left is replaced
  ASSERT_TRUE(agent_->WaitUntilDrained(60s));
  std::set<uint64_t> seqs;
  std::set<std::string> values;
  for (const ConsumedRecord& r : ReadTopic(kafka_->bootstrap(), "crash", committed, 60s)) {
    seqs.insert(r.seq);
    values.insert(r.value);
  }
  EXPECT_EQ(seqs.size(), committed) << "every committed sequence number is in Kafka, once or more";
  EXPECT_EQ(values.size(), committed);
}

}  // namespace
}  // namespace kspool
