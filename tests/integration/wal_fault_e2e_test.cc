// WAL faults seen by a client over real gRPC: a full disk, a failed fsync, a corrupt
// record, and malformed requests. Nothing acknowledged is lost; the agent never exits.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/support/http_get.h"
#include "tests/support/raw_wal.h"
#include "tests/support/spool_harness.h"
#include "wal/record.h"

namespace kspool {
namespace {

using kspool::testing::ScrapeMetrics;
using kspool::testing::SpoolHarness;
using namespace std::chrono_literals;

TEST(WalFaultE2E, FullDiskIsUnavailableAndAcceptsAgainOnceSpaceReturns) {
  SpoolHarness h;
  h.Start();
  const std::string http = h.agent().http_address();
  ASSERT_TRUE(h.Send("t", {"before"}).status.ok());
  h.fs().SetNoSpace(true);
  auto r = h.Send("t", {"no-space"});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
  EXPECT_FALSE(r.retry_after_ms.empty());
  const std::string reopen_failed = "kspool_degraded_events_total{event=\"wal_reopen_failed\"}";
  ASSERT_TRUE(h.WaitUntil([&] { return ScrapeMetrics(http)[reopen_failed] >= 2; }, 20s))
      << "the agent keeps trying to reopen the WAL, and counts each failure";
  EXPECT_EQ(h.Send("t", {"still-full"}).status.error_code(), grpc::StatusCode::UNAVAILABLE);
  // The degraded mode is logged and counted.
  auto metrics = ScrapeMetrics(http);
  EXPECT_EQ(metrics["kspool_wal_healthy"], 0);
  EXPECT_EQ(metrics["kspool_send_rejected_total{code=\"UNAVAILABLE\"}"], 2);
  h.fs().SetNoSpace(false);
  ASSERT_TRUE(h.WaitUntil([&] { return h.Send("t", {"after"}).status.ok(); }, 20s))
      << "the agent resumes accepting by itself";
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  EXPECT_TRUE(dead.empty());
}

TEST(WalFaultE2E, AfterAFailedFsyncNothingIsAckedUntilTheWalIsReopened) {
  SpoolHarness h;
  h.Start([](agent::Config* c) { c->drain.wal_reopen_interval_ms = 1500; });
  ASSERT_TRUE(h.Send("t", {"before"}).status.ok());
  EXPECT_EQ(h.SendFailingItsSync("t", "sync-fails").status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(h.fs().injected_sync_failures(), 1u) << "it was the Send's own write that failed";
  // The disk is fine again, but the WAL's state is unknown until it is reopened.
  auto r = h.Send("t", {"too-early"});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(r.retry_after_ms, "1500");
  ASSERT_TRUE(h.WaitUntil([&] { return h.Send("t", {"after"}).status.ok(); }, 20s));
  EXPECT_GE(h.agent().wal()->reopens(), 1u);
  EXPECT_EQ(h.fs().injected_sync_failures(), 1u) << "no other sync was failed";
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  h.ExpectAllAccountedFor("t");
}

// A Send that waits for Kafka is answered once its message is in Kafka even when the
// WAL cannot record the outcome (every sync fails, the reopens' too): from Kafka's
// acknowledgement, which the failed settle carried, and not at its deadline.
TEST(WalFaultE2E, AWaitForKafkaSendIsAnsweredWhenTheSettleOfItsOutcomeFails) {
  SpoolHarness h({"t:1"});
  h.Start([](agent::Config* c) { c->drain.wal_reopen_interval_ms = 500; });
  ASSERT_EQ(h.kafka().Command("broker down all"), "OK");
  kspool::v1::SendRequest req;
  req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  kspool::v1::Message* m = req.add_messages();
  m->set_topic("t");
  m->set_value("waits");
  grpc::Status status;
  kspool::v1::SendResponse resp;
  std::thread sender([&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 40s);
    status = h.spool().Send(&ctx, req, &resp);
  });
  // Once the message is durable, every later sync fails: the settle's and the reopens'.
  const bool durable = h.WaitUntil([&] { return h.agent().wal()->GetStats().entries >= 1; }, 10s);
  h.fs().FailNextSyncs(1'000'000);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(h.kafka().Command("broker up all"), "OK");
  sender.join();
  ASSERT_TRUE(durable);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "answered, not at its deadline";
  ASSERT_EQ(resp.deliveries_size(), 1);
  EXPECT_EQ(resp.deliveries(0).state(), kspool::v1::DeliveryStatus::DELIVERED);
  EXPECT_GE(resp.deliveries(0).offset(), 0);
  EXPECT_FALSE(h.agent().wal()->health().ok()) << "the outcome was never settled";
  // GetDeliveryStatus reads only the delivery index, in the WAL: while the WAL is closed
  // after the error it answers UNAVAILABLE; a reopen that needed no sync may succeed, and
  // then the entry is still live (PENDING). Never DELIVERED before the settle is durable;
  // once syncs succeed again, the settle goes through and it says DELIVERED (README, "The
  // delivery index").
  auto status_of = [&](kspool::v1::DeliveryStatus* out) {
    kspool::v1::GetDeliveryStatusRequest q;
    q.add_sequences(resp.deliveries(0).sequence());
    kspool::v1::GetDeliveryStatusResponse r;
    grpc::ClientContext ctx;
    grpc::Status st = h.spool().GetDeliveryStatus(&ctx, q, &r);
    if (st.ok() && r.statuses_size() == 1) *out = r.statuses(0);
    return st;
  };
  kspool::v1::DeliveryStatus seen;
  for (int i = 0; i < 5; ++i) {
    const grpc::Status st = status_of(&seen);
    if (st.ok()) {
      EXPECT_EQ(seen.state(), kspool::v1::DeliveryStatus::PENDING) << "try " << i;
    } else {
      EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    }
    std::this_thread::sleep_for(100ms);
  }
  h.fs().FailNextSyncs(0);
  EXPECT_TRUE(h.WaitUntil(
      [&] {
        return status_of(&seen).ok() && seen.state() == kspool::v1::DeliveryStatus::DELIVERED;
      },
      10s))
      << "the outcome reaches the index once the WAL reopens";
  EXPECT_EQ(seen.offset(), resp.deliveries(0).offset());
}

// RocksDB may keep a batch whose sync failed: the bytes reached the file, only the fsync
// did not succeed. The reopen replays it, so a Send answered UNAVAILABLE can still be
// delivered (the README and the proto say so); it is then counted like any other entry.
TEST(WalFaultE2E, ASendAnsweredUnavailableAfterAFailedSyncCanStillBeDeliveredAndIsCountedOnce) {
  SpoolHarness h;
  h.Start();
  ASSERT_TRUE(h.Send("t", {"before"}).status.ok());
  const std::string doomed = "sync-fails|sync-fails";
  auto failed = h.SendFailingItsSync("t", "sync-fails");
  ASSERT_EQ(failed.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  ASSERT_EQ(h.fs().injected_sync_failures(), 1u);
  ASSERT_TRUE(h.WaitUntil([&] { return h.Send("t", {"after"}).status.ok(); }, 20s));
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  h.ExpectAllAccountedFor("t");  // the ledger, with the WAL scanned

  const wal::Stats stats = h.agent().wal()->GetStats();
  EXPECT_EQ(stats.topics.at("t").accepted.count, h.acked().size() + 1)
      << "the unacknowledged message is counted as accepted, once";
  EXPECT_EQ(stats.topics.at("t").delivered.count, h.acked().size() + 1);
  auto records = kspool::testing::ReadTopic(h.kafka().bootstrap(), "t", h.acked().size() + 1, 30s);
  std::set<uint64_t> doomed_seqs;
  for (const auto& rec : records) {
    if (rec.value == doomed) doomed_seqs.insert(rec.seq);
    EXPECT_EQ(h.acked().count(rec.seq), rec.value == doomed ? 0u : 1u) << rec.value;
  }
  ASSERT_EQ(doomed_seqs.size(), 1u) << "the message answered UNAVAILABLE reached Kafka";
  // The refusal named the sequence number the write may have been kept under, so that
  // the client asks about it instead of sending it again blindly.
  const std::string named = std::to_string(*doomed_seqs.begin());
  EXPECT_NE(failed.status.error_message().find("may have been kept: sequences " + named + ".." + named),
            std::string::npos)
      << failed.status.error_message();
}

// Sends a, b, c, d to "t" while Kafka is down, one Send each (so each is a WAL record of
// its own), stops the agent, applies `edit` to the second one's stored bytes, and starts
// the agent again with Kafka up. Returns the sequence numbers.
std::vector<uint64_t> CorruptSecondOfFour(SpoolHarness& h, const std::function<void(std::string*)>& edit) {
  h.Start();
  EXPECT_EQ(h.kafka().Command("broker down all"), "OK");
  std::vector<uint64_t> seqs;
  for (const char* v : {"a", "b", "c", "d"}) {
    auto sent = h.Send("t", {v});
    EXPECT_TRUE(sent.status.ok());
    seqs.push_back(sent.seqs.at(0));
  }
  h.Stop();
  EXPECT_TRUE(kspool::testing::EditLogEntry(h.wal_dir(), seqs.at(1), edit).ok());
  EXPECT_EQ(h.kafka().Command("broker up all"), "OK");
  h.Start();
  return seqs;
}

TEST(WalFaultE2E, CorruptRecordIsQuarantinedAndTheRestIsDelivered) {
  SpoolHarness h;
  // Flip one byte of the value of the second entry, behind the agent's back.
  auto seqs = CorruptSecondOfFour(h, [](std::string* v) { (*v)[v->size() - 1] ^= 0x20; });
  ASSERT_TRUE(h.WaitUntilDrained(30s)) << "a corrupt entry must not stall the drain";
  ASSERT_TRUE(h.Send("t", {"after"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[seqs[1]], "corrupt");
  EXPECT_EQ(h.agent().wal()->GetStats().topics["t"].discarded["corrupt"].count, 1u);
  // The commit point moves past the quarantined entry.
  ASSERT_TRUE(h.WaitUntil([&] {
    return h.agent().wal()->SavedCommitPoints().global_ms > 0 &&
           h.agent().wal()->GetStats().entries == 0;
  }, 10s));
}

// The topic itself is unreadable: the WAL charges the discard to the topic whose ledger
// owns the entry, so the ledger, the report and /status show no line without a topic.
TEST(WalFaultE2E, CorruptRecordWithAnUnreadableTopicIsCountedUnderItsTopic) {
  SpoolHarness h;
  // Byte 15 is the topic's first byte in a batch record of one message (FORMAT.md);
  // 0x01 is no topic character.
  auto seqs = CorruptSecondOfFour(h, [](std::string* v) { (*v)[15] = '\x01'; });
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[seqs[1]], "corrupt");
  const wal::Stats stats = h.agent().wal()->GetStats();
  EXPECT_EQ(stats.topics.count(""), 0u);
  EXPECT_EQ(stats.topics.at("t").discarded.at("corrupt").count, 1u);
  EXPECT_EQ(stats.topics.at("t").accepted.count, 4u);
  EXPECT_EQ(stats.topics.at("t").delivered.count, 3u);
  ASSERT_TRUE(h.WaitUntil([&] { return h.agent().wal()->SavedCommitPoints().global_ms > 0; }, 10s));
  const auto report = h.Report();
  for (const auto& t : report.topics()) EXPECT_NE(t.topic(), "") << "a report line without a topic";
  auto status = kspool::testing::HttpGet(h.agent().http_address(), "/status");
  EXPECT_EQ(status.body.find("\"\":"), std::string::npos) << status.body;
}

// A Send's messages to one topic share one WAL record: a record that fails its checksum
// quarantines each of them (a dead letter per message, each under its topic, each charged
// its own size), and the Sends before and after it are delivered.
TEST(WalFaultE2E, CorruptBatchRecordQuarantinesEachOfItsMessages) {
  SpoolHarness h;
  h.Start();
  ASSERT_EQ(h.kafka().Command("broker down all"), "OK");
  ASSERT_TRUE(h.Send("t", {"before"}).status.ok());
  auto batch = h.Send("t", {"m0", "m1", "m2", "m3", "m4"});
  ASSERT_TRUE(batch.status.ok());
  ASSERT_TRUE(h.Send("t", {"after"}).status.ok());
  h.Stop();
  size_t key_size = 0;
  ASSERT_TRUE(kspool::testing::EditLogEntry(
                  h.wal_dir(), batch.seqs.at(2),
                  [](std::string* v) { (*v)[v->size() - 1] ^= 0x20; }, &key_size)
                  .ok());
  ASSERT_EQ(key_size, 12u) << "not a batch record";
  ASSERT_EQ(h.kafka().Command("broker up all"), "OK");
  h.Start();
  ASSERT_TRUE(h.WaitUntilDrained(30s)) << "a corrupt record must not stall the drain";
  auto dead = h.ExpectAllAccountedFor("t");
  ASSERT_EQ(dead.size(), 5u);
  for (uint64_t seq : batch.seqs) EXPECT_EQ(dead[seq], "corrupt") << seq;
  const wal::Stats stats = h.agent().wal()->GetStats();
  EXPECT_EQ(stats.topics.count(""), 0u);
  EXPECT_EQ(stats.topics.at("t").discarded.at("corrupt").count, 5u);
  EXPECT_EQ(stats.topics.at("t").delivered.count, 2u);
  EXPECT_EQ(stats.topics.at("t").pending().bytes, 0u) << "each was charged its own size";
  EXPECT_EQ(stats.entries, 0u);
}

TEST(WalFaultE2E, BadRequestsAreRejectedWholeNamingIndexAndField) {
  SpoolHarness h;
  h.Start([](agent::Config* c) {
    c->limits.max_message_bytes = 1000;
    c->limits.max_batch_messages = 5;
  });
  auto good = [] {
    kspool::v1::Message m;
    m.set_topic("t");
    m.set_value("fine");
    return m;
  };
  struct Case {
    std::string name;
    std::function<void(kspool::v1::SendRequest*)> make;
    std::string want;
  };
  std::vector<Case> cases = {
      {"empty request", [](auto*) {}, "request has no messages"},
      {"empty topic", [&](auto* r) { *r->add_messages() = good(); r->add_messages()->set_value("x"); },
       "message 1: topic: topic is empty"},
      {"invalid topic", [&](auto* r) { auto* m = r->add_messages(); *m = good(); m->set_topic("a b"); },
       "message 0: topic"},
      {"dot topic", [&](auto* r) { auto* m = r->add_messages(); *m = good(); m->set_topic(".."); },
       "message 0: topic"},
      {"long topic", [&](auto* r) { auto* m = r->add_messages(); *m = good(); m->set_topic(std::string(250, 'a')); },
       "message 0: topic"},
      {"large value", [&](auto* r) { *r->add_messages() = good(); auto* m = r->add_messages(); *m = good(); m->set_value(std::string(1001, 'v')); },
       "message 1: value"},
      {"large message", [&](auto* r) { auto* m = r->add_messages(); *m = good(); m->set_value(std::string(600, 'v')); m->set_key(std::string(600, 'k')); },
       "message 0: message"},
      {"too many", [&](auto* r) { for (int i = 0; i < 6; ++i) *r->add_messages() = good(); },
       "6 messages; --max-batch-messages is 5"},
      {"partition", [&](auto* r) { auto* m = r->add_messages(); *m = good(); m->set_partition(-2); },
       "message 0: partition"},
      {"header key", [&](auto* r) { auto* m = r->add_messages(); *m = good(); m->add_headers()->set_value("v"); },
       "message 0: headers[0].key"},
  };
  const uint64_t next_before = h.agent().wal()->GetStats().next_seq;
  for (const Case& c : cases) {
    kspool::v1::SendRequest req;
    c.make(&req);
    auto r = h.SendRequest(req);
    EXPECT_EQ(r.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.name;
    EXPECT_NE(r.status.error_message().find(c.want), std::string::npos)
        << c.name << ": " << r.status.error_message();
  }
  EXPECT_EQ(h.agent().wal()->GetStats().next_seq, next_before) << "nothing was written";
  ASSERT_TRUE(h.Send("t", {"valid"}).status.ok()) << "and the agent still serves";
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  h.ExpectAllAccountedFor("t");
}

}  // namespace
}  // namespace kspool
