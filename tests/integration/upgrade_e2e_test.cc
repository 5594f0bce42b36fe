// Upgrade in place, end to end: a real agent of today's build started on a WAL directory
// written by an earlier release (tests/wal/fixtures/, what it holds: wal_fixture.h) over
// kspool-devkafka delivers every live entry as it was written (topic, partition, key,
// value, headers, timestamp, its sequence number), none of the settled ones, and drains
// the WAL; a Send is then accepted and numbered after the fixture's.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/fixtures/wal_fixture.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ConsumedRecord;
using kspool::testing::DevKafka;
using namespace std::chrono_literals;
namespace fixture = kspool::wal::fixture;

class UpgradeE2E : public ::testing::TestWithParam<std::string> {};

TEST_P(UpgradeE2E, AnAgentDeliversEveryLiveEntryOfAnEarlierFormatsWalAndDrainsIt) {
  kspool::testing::TempDir tmp;
  const std::string wal = tmp.sub("wal");
  fixture::CopyTo(GetParam(), wal);
  DevKafka kafka(tmp.path(), 1, {"orders:4", "events:4"});
  AgentProcess agent(wal, tmp.sub("agent.log"), kafka.bootstrap());
  ASSERT_TRUE(agent.WaitUntilDrained(30s)) << agent.WalStats().entries() << " entries left";

  std::map<uint64_t, ConsumedRecord> by_seq;
  for (const std::string topic : {"orders", "events"}) {
    for (ConsumedRecord& r : kspool::testing::ReadTopic(kafka.bootstrap(), topic, 1, 20s)) {
      EXPECT_TRUE(by_seq.emplace(r.seq, r).second) << "seq " << r.seq << " twice in Kafka";
    }
  }
  std::vector<uint64_t> seqs;
  for (const auto& [seq, r] : by_seq) seqs.push_back(seq);
  EXPECT_EQ(seqs, fixture::LiveSeqs()) << "the live entries, and only them";
  const std::vector<fixture::Message> messages = fixture::Messages();
  for (const auto& [seq, r] : by_seq) {
    if (seq == 0 || seq > messages.size()) continue;
    const wal::Record& want = messages[seq - 1].record;
    EXPECT_EQ(r.key, want.key) << seq;
    EXPECT_EQ(r.value, want.value) << seq;
    if (want.partition >= 0) {
      EXPECT_EQ(r.partition, want.partition) << seq;
    }
    EXPECT_EQ(r.timestamp_ms, want.client_timestamp_ms.value_or(messages[seq - 1].receive_time_ms))
        << seq;
    for (const wal::Header& h : want.headers) {
      const std::pair<std::string, std::string> kv{h.key, h.value};
      EXPECT_NE(std::find(r.headers.begin(), r.headers.end(), kv), r.headers.end())
          << seq << ": header " << h.key;
    }
  }

  kspool::v1::SendRequest req;
  auto* m = req.add_messages();
  m->set_topic("events");
  m->set_value("after the upgrade");
  kspool::v1::SendResponse resp;
  grpc::Status s = agent.Send(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.sequence_size(), 1);
  EXPECT_EQ(resp.sequence(0), 13u);
  EXPECT_TRUE(agent.WaitUntilDrained(30s));
}

INSTANTIATE_TEST_SUITE_P(Fixture, UpgradeE2E, ::testing::ValuesIn(fixture::Dirs()),
                         [](const auto& info) { return fixture::TestName(info.param); });

}  // namespace
}  // namespace kspool
