// WAL faults seen by a client over real gRPC: a full disk, a failed fsync, a corrupt
// record, and malformed requests. Nothing acknowledged is lost; the agent never exits.
#include <gtest/gtest.h>

#include <thread>

#include "rocksdb/db.h"
#include "tests/support/http_get.h"
#include "tests/support/spool_harness.h"
#include "wal/record.h"

namespace kspool {
namespace {

using kspool::testing::SpoolHarness;
using namespace std::chrono_literals;

TEST(WalFaultE2E, FullDiskIsUnavailableAndAcceptsAgainOnceSpaceReturns) {
  SpoolHarness h;
  h.Start();
  ASSERT_TRUE(h.Send("t", {"before"}).status.ok());
  h.fs().SetNoSpace(true);
  auto r = h.Send("t", {"no-space"});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
  EXPECT_FALSE(r.retry_after_ms.empty());
  std::this_thread::sleep_for(700ms);  // several reopen attempts fail meanwhile
  EXPECT_EQ(h.Send("t", {"still-full"}).status.error_code(), grpc::StatusCode::UNAVAILABLE);
  // The degraded mode is logged and counted.
  auto metrics = kspool::testing::HttpGet(h.agent().http_address(), "/metrics").body;
  EXPECT_NE(metrics.find("kspool_degraded_events_total{event=\"wal_reopen_failed\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("kspool_wal_healthy 0"), std::string::npos);
  EXPECT_NE(metrics.find("kspool_send_rejected_total{code=\"UNAVAILABLE\"} 2"), std::string::npos);
  h.fs().SetNoSpace(false);
  ASSERT_TRUE(h.WaitUntil([&] { return h.Send("t", {"after"}).status.ok(); }, 20s))
      << "the agent resumes accepting by itself";
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  EXPECT_TRUE(dead.empty());
}

TEST(WalFaultE2E, AfterAFailedFsyncNothingIsAckedUntilTheWalIsReopened) {
  SpoolHarness h;
  h.Start([](agent::Config* c) { c->wal_reopen_interval_ms = 1500; });
  ASSERT_TRUE(h.Send("t", {"before"}).status.ok());
  h.fs().FailNextSyncs(1);
  EXPECT_EQ(h.Send("t", {"sync-fails"}).status.error_code(), grpc::StatusCode::UNAVAILABLE);
  // The disk is fine again, but the WAL's state is unknown until it is reopened.
  auto r = h.Send("t", {"too-early"});
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(r.retry_after_ms, "1500");
  ASSERT_TRUE(h.WaitUntil([&] { return h.Send("t", {"after"}).status.ok(); }, 20s));
  EXPECT_GE(h.agent().wal()->reopens(), 1u);
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  h.ExpectAllAccountedFor("t");
}

TEST(WalFaultE2E, CorruptRecordIsQuarantinedAndTheRestIsDelivered) {
  SpoolHarness h;
  h.Start();
  ASSERT_EQ(h.kafka().Command("broker down all"), "OK");
  auto sent = h.Send("t", {"a", "b", "c", "d"});
  ASSERT_TRUE(sent.status.ok());
  h.Stop();
  {
    // Flip one byte of the value of the second entry, behind the agent's back.
    rocksdb::DB* db;
    std::vector<rocksdb::ColumnFamilyHandle*> cfh;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {"default", {}}, {"log", {}}, {"meta", {}}, {"dead", {}}};
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), h.wal_dir(), cfs, &cfh, &db).ok());
    std::string key(8, '\0');
    for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(sent.seqs[1] >> (8 * (7 - i)));
    std::string v;
    ASSERT_TRUE(db->Get({}, cfh[1], key, &v).ok());
    v[v.size() - 1] ^= 0x20;
    ASSERT_TRUE(db->Put({}, cfh[1], key, v).ok());
    for (auto* c : cfh) db->DestroyColumnFamilyHandle(c);
    delete db;
  }
  ASSERT_EQ(h.kafka().Command("broker up all"), "OK");
  h.Start();
  ASSERT_TRUE(h.WaitUntilDrained(30s)) << "a corrupt entry must not stall the drain";
  ASSERT_TRUE(h.Send("t", {"after"}).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  auto dead = h.ExpectAllAccountedFor("t");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[sent.seqs[1]], "corrupt");
  EXPECT_EQ(h.agent().wal()->GetStats().topics["t"].discarded["corrupt"].count, 1u);
  // The commit point moves past the quarantined entry.
  ASSERT_TRUE(h.WaitUntil([&] {
    return h.agent().wal()->SavedCommitPoints().global_ms > 0 &&
           h.agent().wal()->GetStats().entries == 0;
  }, 10s));
}

TEST(WalFaultE2E, BadRequestsAreRejectedWholeNamingIndexAndField) {
  SpoolHarness h;
  h.Start([](agent::Config* c) {
    c->max_message_bytes = 1000;
    c->max_batch_messages = 5;
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
