// Reconciliation after a producer replacement, end to end: kspool-devkafka answers
// produce requests with OUT_OF_ORDER_SEQUENCE_NUMBER mid-load, a fatal error for the
// idempotent producer; the agent replaces it, and the messages whose attempts were on
// the wire (possibly persisted) are read back before they go again. A consumer over
// every partition then finds each acknowledged message exactly once.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/integration/exactly_once.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
  return n;
}

TEST(ReplacementE2E, NoDuplicatesWhenTheProducerIsReplacedMidLoad) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 3, {"fa:3", "fb:2"});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap());
  std::map<uint64_t, std::string> acked;
  for (int n = 0; n < 120; ++n) {
    if (n == 40) {
      ASSERT_EQ(kafka.Command("request error Produce 2 OUT_OF_ORDER_SEQUENCE_NUMBER"), "OK");
    }
    kspool::v1::SendRequest req;
    for (int i = 0; i < 50; ++i) {
      auto* m = req.add_messages();
      m->set_topic(i % 2 ? "fa" : "fb");
      m->set_value("m-" + std::to_string(n) + "-" + std::to_string(i));
      if (i % 3 == 0) m->set_key("k" + std::to_string((n + i) % 11));
    }
    kspool::v1::SendResponse resp;
    grpc::Status s = agent.Send(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    for (int i = 0; i < resp.sequence_size(); ++i)
      acked[resp.sequence(i)] = req.messages(i).topic();
  }
  ASSERT_TRUE(agent.WaitUntilDrained(std::chrono::seconds(60)));
  auto copies = kspool::testing::ReadCopies(kafka.bootstrap(), {"fa", "fb"}, acked.size());
  const std::string log = kspool::testing::ReadLog(dir.sub("agent.log"));
  EXPECT_EQ(kspool::testing::CheckExactlyOnce(agent, acked, copies), 0u)
      << kspool::testing::ReconcileLines(dir.sub("agent.log"));
  EXPECT_GE(Count(log, "replacing the producer after a fatal error"), 1u);
  // The replacement found messages on the wire: they were reconciled, not just resent.
  EXPECT_GE(Count(log, "entries may be in Kafka unreported"), 1u)
      << kspool::testing::ReconcileLines(dir.sub("agent.log"));
  std::printf("acked=%zu replacements=%zu rounds=%zu\n", acked.size(),
              Count(log, "replacing the producer after a fatal error"),
              Count(log, "entries may be in Kafka unreported"));
}

}  // namespace
}  // namespace kspool
