// Memory per topic name, end to end: a real agent process over kspool-devkafka sent one
// message to each of many new topic names, in batches. What the agent keeps per name is
// bounded by --max-tracked-topics: the Kafka clients are replaced once they hold more
// names than that (they keep every topic they were given), and /metrics sums forgotten
// topics' counters under topic="(forgotten)". Before, each name cost about 48 KB of RSS
// for the agent's life, and 110 bytes of /metrics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/process_memory.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::kMiB;
using kspool::testing::Metric;
using kspool::testing::RssBytes;
using namespace std::chrono_literals;

constexpr int kNamesPerBatch = 400;

uint64_t Recycled(AgentProcess& agent) {
  const std::string body = kspool::testing::HttpGet(agent.http_address(), "/status").body;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return 0;
  for (const auto& [k, v] : j.items()) {
    if (v.is_object() && v.contains("producers_recycled")) return v["producers_recycled"];
  }
  return 0;
}

// One message to each of kNamesPerBatch names never used before; then waits until they
// are delivered and forgotten, and the producer that learnt them has been replaced.
void SendToNewNames(AgentProcess& agent, int batch) {
  const uint64_t recycled = Recycled(agent);
  kspool::v1::SendRequest req;
  for (int i = 0; i < kNamesPerBatch; ++i) {
    auto* m = req.add_messages();
    m->set_topic("name-" + std::to_string(batch) + "-" + std::to_string(i));
    m->set_value(std::string(100, 'v'));
  }
  kspool::v1::SendResponse resp;
  grpc::Status s = agent.Send(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(agent.WaitUntilDrained(30s)) << "batch " << batch;
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] { return Metric(agent.http_address(), "kspool_tracked_topics") == 0; }, 10s, 50ms));
  ASSERT_TRUE(kspool::testing::WaitUntil([&] { return Recycled(agent) > recycled; }, 15s, 100ms))
      << "batch " << batch << ": the producer holding " << kNamesPerBatch
      << " names was not replaced";
}

TEST(TopicNamesMemory, ThousandsOfNamesLeaveRssAndTheMetricsPageBounded) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 1, {});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--max-tracked-topics", "100", "--topic-idle-forget", "1s"});
  const pid_t pid = agent.process().pid();
  // Two batches first: the allocator's arenas and RocksDB's memtables settle meanwhile.
  for (int batch = 0; batch < 2; ++batch) {
    SendToNewNames(agent, batch);
    if (HasFatalFailure()) return;
  }
  const int64_t base_rss = RssBytes(pid);
  const size_t base_page = kspool::testing::HttpGet(agent.http_address(), "/metrics").body.size();
  for (int batch = 2; batch < 5; ++batch) {
    SendToNewNames(agent, batch);
    if (HasFatalFailure()) return;
  }
  const int64_t rss = RssBytes(pid);
  const std::string page = kspool::testing::HttpGet(agent.http_address(), "/metrics").body;
  std::printf("[ info ] %d new names: RSS %lld -> %lld MB, /metrics %zu -> %zu bytes\n",
              3 * kNamesPerBatch, static_cast<long long>(base_rss / kMiB),
              static_cast<long long>(rss / kMiB), base_page, page.size());
  // 1,200 names at 48 KB each would be 56 MB; what is left is allocator noise (1-6 MB).
#ifndef KSPOOL_SANITIZED
  EXPECT_LT(rss, base_rss + 16 * kMiB);
#endif
  EXPECT_LT(page.size(), base_page + 2048) << "the page grew with the names";
  EXPECT_EQ(page.find("name-3-"), std::string::npos) << "a forgotten name still has series";
  EXPECT_EQ(Metric(agent.http_address(), "kspool_messages_delivered_total{topic=\"(forgotten)\"}"),
            5 * kNamesPerBatch);
}

}  // namespace
}  // namespace kspool
