// Bounds over real gRPC: a topic whose partition has no leader fills at most
// --topic-max-bytes of the WAL; beyond it only its Sends get RESOURCE_EXHAUSTED (with
// retry-after-ms), while another topic's Sends are accepted and delivered.
#include <gtest/gtest.h>

#include "tests/support/http_get.h"
#include "tests/support/spool_harness.h"

namespace kspool {
namespace {

using kspool::testing::SpoolHarness;
using namespace std::chrono_literals;

std::vector<std::string> PaddedValues(const std::string& prefix, int n) {
  return kspool::testing::Values(prefix, n, /*pad=*/100);
}

TEST(Bounds, AFullTopicIsRefusedWhileAnotherTopicIsAcceptedAndDelivered) {
  SpoolHarness h({"stuck:1", "healthy:2"});
  h.Start([](agent::Config* c) {
    c->wal.max_bytes = 10 << 20;
    c->topic_max_bytes = agent::ByteSize{0, 0.5};  // 0.5% of 10 MiB: about 52 KB
  });
  ASSERT_EQ(h.kafka().Command("leader stuck 0 none"), "OK");

  kspool::testing::SendResult full;
  int stuck_accepted = 0;
  for (int i = 0; i < 1000; ++i) {
    full = h.Send("stuck", PaddedValues("s" + std::to_string(i) + "-", 10));
    if (!full.status.ok()) break;
    stuck_accepted += 10;
  }
  ASSERT_EQ(full.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << full.status.error_message();
  EXPECT_NE(full.status.error_message().find("topic stuck full"), std::string::npos)
      << full.status.error_message();
  EXPECT_FALSE(full.retry_after_ms.empty()) << "the client is told when to retry";
  EXPECT_GT(stuck_accepted, 100);
  const wal::Stats st = h.agent().wal()->GetStats();
  EXPECT_LE(st.topics.at("stuck").pending().bytes, (10u << 20) / 200);

  // Another topic is still accepted, and delivered: its commit point passes its messages.
  kspool::testing::SendResult ok;
  for (int i = 0; i < 20; ++i) {
    ok = h.Send("healthy", PaddedValues("h" + std::to_string(i) + "-", 10));
    ASSERT_TRUE(ok.status.ok()) << ok.status.error_message();
  }
  ASSERT_TRUE(h.WaitUntil([&] {
    auto points = h.agent().wal()->SavedCommitPoints().topics_ms;
    return points.count("healthy") && points.at("healthy") >= ok.receive_time_ms;
  }, 30s)) << "the healthy topic drains while the stuck one is full";
  EXPECT_EQ(h.Send("stuck", PaddedValues("again-", 1)).status.error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);

  const std::string metrics =
      kspool::testing::HttpGet(h.agent().http_address(), "/metrics").body;
  EXPECT_NE(metrics.find("kspool_wal_topic_full_refusals_total{topic=\"stuck\"} 2"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("kspool_wal_appends_refused_total{reason=\"topic_full\"} 2"),
            std::string::npos);

  // With its leader back, the stuck topic drains and is accepted again.
  ASSERT_EQ(h.kafka().Command("leader stuck 0 1"), "OK");
  ASSERT_TRUE(h.WaitUntilDrained(60s));
  EXPECT_TRUE(h.Send("stuck", PaddedValues("after-", 10)).status.ok());
  ASSERT_TRUE(h.WaitUntilDrained(30s));
  EXPECT_TRUE(h.ExpectAllAccountedFor("stuck").empty());
  EXPECT_TRUE(h.ExpectAllAccountedFor("healthy").empty());
}

}  // namespace
}  // namespace kspool
