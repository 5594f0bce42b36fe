// Faults and bad input, provoked through kspool-devkafka's fault commands and the WAL's
// fault-injecting file system, over real gRPC; each test ends with the ledger check.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "rocksdb/db.h"
#include "tests/support/http_get.h"
#include "tests/support/spool_harness.h"
#include "wal/record.h"

namespace kspool {
namespace {

using kspool::testing::SpoolHarness;
using kspool::testing::Values;
using namespace std::chrono_literals;

TEST(Fault, KafkaDownSendsFillTheWalThenEverythingDrains) {
  SpoolHarness h;
  h.Start([](agent::Config* c) { c->wal.max_bytes = 20000; });
  ASSERT_EQ(h.kafka().Command("broker down all"), "OK");
  int accepted = 0;
  kspool::testing::SendResult full;
  for (int i = 0; i < 1000; ++i) {
    full = h.Send("t", Values("m" + std::to_string(i) + "-", 10));
    if (!full.status.ok()) break;
    accepted += 10;
  }
  ASSERT_EQ(full.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << full.status.error_message();
  EXPECT_NE(full.status.error_message().find("WAL full"), std::string::npos);
  EXPECT_FALSE(full.retry_after_ms.empty()) << "a full WAL tells the client when to retry";
  EXPECT_GT(accepted, 50);
  EXPECT_EQ(h.agent().wal()->GetStats().entries, static_cast<uint64_t>(accepted))
      << "the rejected request wrote nothing";
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(h.agent().drain()->discarded(), 0u) << "an outage never discards";

  ASSERT_EQ(h.kafka().Command("broker up all"), "OK");
  ASSERT_TRUE(h.WaitUntilDrained(60s));
  EXPECT_TRUE(h.Send("t", Values("after-", 10)).status.ok()) << "room again";
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  ASSERT_TRUE(h.WaitUntil(
      [&] {
        return h.agent().drain() && h.agent().wal()->SavedCommitPoints().global_ms >=
                                        std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                                .count() -
                                            1000;
      },
      10s))
      << "the commit point catches up";
  auto dead = h.ExpectAllAccountedFor("t");
  EXPECT_TRUE(dead.empty());
}

// The errors outlast librdkafka's own retries (a 300 ms message timeout, 200 ms between
// its retries), so the delivery reports come back to kspool as failures and kspool's
// retry path — backoff, holding the topic back, producing again in order — must run.
TEST(Fault, TransientErrorsAreRetriedByKspoolAndKeepKeyOrder) {
  SpoolHarness h({"t:2"});
  // linger.ms=50: the request's entries leave in one batch per partition even on a slow
  // machine (ASan). With the default 1 ms, librdkafka may send the first entries the
  // drain hands it before the rest arrive; that first batch can then time out in a retry
  // while the second, sent later, is still on the wire and lands: the overtaking case
  // README "Order" describes, not what this test is about (seen once under ASan).
  h.Start([](agent::Config* c) {
    c->kafka_options = {"message.timeout.ms=300", "retry.backoff.ms=200", "linger.ms=50"};
  });
  ASSERT_EQ(h.kafka().Command("request error Produce 6 NOT_LEADER_OR_FOLLOWER"), "OK");
  ASSERT_EQ(h.kafka().Command("request error Produce 3 REQUEST_TIMED_OUT"), "OK");
  ASSERT_EQ(h.kafka().Command("request error Produce 3 NETWORK_EXCEPTION"), "OK");
  // One request: its entries are read and handed to librdkafka together, so the failed
  // requests hold all of them. (A message that times out in librdkafka while a newer one
  // of its partition is already on the wire can be overtaken by it: README, "Order".)
  kspool::v1::SendRequest req;
  for (int i = 0; i < 30; ++i) {
    for (const std::string k : {"k1", "k2"}) {
      auto* m = req.add_messages();
      m->set_topic("t");
      m->set_key(k);
      m->set_value(k + "-" + std::to_string(i));
    }
  }
  ASSERT_TRUE(h.SendRequest(req).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(60s));
  EXPECT_EQ(h.agent().drain()->discarded(), 0u);
  auto metrics = kspool::testing::ScrapeMetrics(h.agent().http_address());
  EXPECT_GT(metrics["kspool_messages_redelivered_total{topic=\"t\"}"], 0)
      << "kspool itself produced failed messages again";
  auto records = kspool::testing::ReadTopic(h.kafka().bootstrap(), "t", 60, 30s);
  std::map<std::string, std::vector<std::string>> order;  // first occurrences per key
  std::set<uint64_t> seen;
  for (const auto& r : records) {
    if (seen.insert(r.seq).second) order[*r.key].push_back(r.value);
  }
  for (const std::string k : {"k1", "k2"}) {
    ASSERT_EQ(order[k].size(), 30u);
    for (int i = 0; i < 30; ++i) EXPECT_EQ(order[k][i], k + "-" + std::to_string(i));
  }
  h.ExpectAllAccountedFor("t");
}

TEST(Fault, MessageTimeoutsAreRetriedNotDiscarded) {
  SpoolHarness h({"t:2"});
  h.Start([](agent::Config* c) { c->kafka_options = {"message.timeout.ms=500"}; });
  ASSERT_EQ(h.kafka().Command("broker rtt all 1500"), "OK");
  ASSERT_TRUE(h.Send("t", Values("slow-", 20)).status.ok());
  ASSERT_TRUE(h.WaitUntil([&] { return h.agent().drain()->redelivered() > 0; }, 20s))
      << "librdkafka's MSG_TIMED_OUT must lead to a re-produce";
  ASSERT_EQ(h.kafka().Command("broker rtt all 0"), "OK");
  ASSERT_TRUE(h.WaitUntilDrained(60s));
  EXPECT_EQ(h.agent().drain()->discarded(), 0u);
  auto dead = h.ExpectAllAccountedFor("t");
  EXPECT_TRUE(dead.empty());
}

TEST(Fault, PermanentBrokerErrorsDiscardIntoDeadLettersWithTheirReason) {
  SpoolHarness h({"t:1"});
  h.Start();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"MSG_SIZE_TOO_LARGE", "msg_size_too_large"},
      {"INVALID_RECORD", "invalid_record"},
      {"TOPIC_AUTHORIZATION_FAILED", "topic_authorization_failed"}};
  std::map<uint64_t, std::string> want;
  for (const auto& [error, reason] : cases) {
    uint64_t before = h.agent().drain()->discarded();
    // A message refused as too large is sent again alone before it is discarded: the
    // broker refuses it twice.
    const std::string times = error == "MSG_SIZE_TOO_LARGE" ? "2" : "1";
    ASSERT_EQ(h.kafka().Command("request error Produce " + times + " " + error), "OK");
    auto r = h.Send("t", {"doomed-" + error});
    ASSERT_TRUE(r.status.ok());
    want[r.seqs[0]] = reason;
    ASSERT_TRUE(h.WaitUntil([&] { return h.agent().drain()->discarded() > before; }, 20s)) << error;
    if (reason == "topic_authorization_failed") continue;  // librdkafka keeps it per topic
    ASSERT_TRUE(h.Send("t", {"fine-after-" + error}).status.ok());
    ASSERT_TRUE(h.WaitUntilDrained(20s));  // before the next error is armed
  }
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  EXPECT_EQ(dead, want);
  std::vector<wal::DeadLetter> letters;
  ASSERT_TRUE(h.agent().wal()->ScanDeadLetters(0, 10, &letters).ok());
  for (const auto& d : letters) {
    EXPECT_FALSE(d.error_text.empty());
    EXPECT_GT(d.discard_time_ms, 0);
    EXPECT_EQ(wal::DecodeRecord(d.raw)->topic, "t") << "the whole message is kept";
  }
  auto stats = h.agent().wal()->GetStats();
  EXPECT_EQ(stats.topics["t"].discarded["msg_size_too_large"].count, 1u);
}

TEST(Fault, MessageTooLargeForTheProducerIsDiscarded) {
  SpoolHarness h({"t:1"});
  h.Start([](agent::Config* c) { c->kafka_options = {"message.max.bytes=2000"}; });
  auto big = h.Send("t", {std::string(5000, 'x')});
  ASSERT_TRUE(big.status.ok());
  ASSERT_TRUE(h.Send("t", {"small"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[big.seqs[0]], "msg_size_too_large");
}

TEST(Fault, UnknownTopicAndPartitionAreDiscardedAfterFreshMetadataChecks) {
  SpoolHarness h({"t:2"});
  h.Start([](agent::Config* c) {
    c->drain.unknown_topic_checks = 2;
    c->kafka_options = {"topic.metadata.propagation.max.ms=300", "message.timeout.ms=2000"};
  });
  ASSERT_EQ(h.kafka().Command("topic error ghost UNKNOWN_TOPIC_OR_PART"), "OK");
  auto ghost = h.Send("ghost", {"to-nowhere"});
  ASSERT_TRUE(ghost.status.ok());
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("t");
  m->set_value("partition-7");
  m->set_partition(7);
  auto bad_partition = h.SendRequest(req);
  ASSERT_TRUE(bad_partition.status.ok());
  ASSERT_TRUE(h.Send("t", {"ok"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(60s));
  auto dead_t = h.ExpectAllAccountedFor("t");
  EXPECT_EQ(dead_t[bad_partition.seqs[0]], "unknown_partition");
  std::vector<wal::DeadLetter> letters;
  ASSERT_TRUE(h.agent().wal()->ScanDeadLetters(ghost.seqs[0], 1, &letters).ok());
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].reason, "unknown_topic");
  EXPECT_NE(letters[0].error_text.find("does not exist"), std::string::npos)
      << letters[0].error_text;
}

TEST(Fault, MaxMessageAgeExpiresUndeliverableMessages) {
  SpoolHarness h({"t:2"});
  h.Start([](agent::Config* c) {
    c->drain.max_message_age_ms = 1000;
    c->kafka_options = {"reconnect.backoff.max.ms=200"};
  });
  ASSERT_EQ(h.kafka().Command("broker down all"), "OK");
  ASSERT_TRUE(h.Send("t", Values("old-", 5)).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(20s)) << "expired entries leave the WAL";
  ASSERT_EQ(h.kafka().Command("broker up all"), "OK");
  // The fresh message must not expire while librdkafka reconnects.
  ASSERT_TRUE(h.WaitUntil(
      [&] {
        return kspool::testing::ScrapeMetrics(
                   h.agent().http_address())["kspool_kafka_brokers_up"] >= 1;
      },
      10s));
  ASSERT_TRUE(h.Send("t", {"fresh"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  EXPECT_EQ(dead.size(), 5u);
  for (const auto& [seq, reason] : dead) EXPECT_EQ(reason, "expired");
}

}  // namespace
}  // namespace kspool
