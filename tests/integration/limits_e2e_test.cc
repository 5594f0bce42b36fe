// The default message size limit against Kafka's, end to end: a kspool-agent process on
// its defaults and a kspool-devkafka cluster. A message the agent acknowledges must reach
// Kafka, not the dead letters (the old default, 1 MiB, acknowledged messages that
// librdkafka's default message.max.bytes of 1,000,000 then refused).
#include <gtest/gtest.h>

#include "agent/validate/kafka_limits.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using namespace std::chrono_literals;

// The largest message the default allows, with 64 headers (the most the default size
// arithmetic makes room for), most of them long enough for 3-byte length varints.
kspool::v1::SendRequest Largest(size_t extra_value_bytes) {
  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("big");
  m->set_key(std::string(8192, 'k'));
  uint64_t size = m->key().size();
  for (uint64_t h = 0; h < agent::kHeadersBudgeted; ++h) {
    const size_t n = h < 59 ? 8192 : 1;
    auto* header = m->add_headers();
    header->set_key(std::string(n, 'h'));
    header->set_value(std::string(n, 'v'));
    size += 2 * n;
  }
  m->set_value(std::string(agent::kDefaultMaxMessageBytes - size + extra_value_bytes, 'x'));
  return req;
}

TEST(LimitsE2E, LargestMessageAcceptedOnDefaultsReachesKafkaAndOneMiBIsRefused) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 1, {"big:1"});
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap());

  kspool::v1::SendRequest mib;
  auto* m = mib.add_messages();
  m->set_topic("big");
  m->set_value(std::string(1 << 20, 'x'));
  kspool::v1::SendResponse resp;
  grpc::Status s = agent.Send(mib, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << "1 MiB does not fit Kafka's default limit: " << s.error_message();
  s = agent.Send(Largest(1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "one byte over the limit";

  const kspool::v1::SendRequest largest = Largest(0);
  s = agent.Send(largest, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(agent.WaitUntilDrained(30s));
  auto records = kspool::testing::ReadTopic(kafka.bootstrap(), "big", 1, 30s);
  ASSERT_EQ(records.size(), 1u) << "delivered, not discarded into the dead letters";
  EXPECT_EQ(records[0].value, largest.messages(0).value());
  EXPECT_EQ(records[0].headers.size(), agent::kHeadersBudgeted + 2);  // + kspool.agent, .seq
  EXPECT_EQ(records[0].seq, resp.sequence(0));
}

}  // namespace
}  // namespace kspool
