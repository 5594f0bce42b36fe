// --max-message-age against reconciliation, end to end: a restart that comes later than
// the age limit must not discard what Kafka already holds. Real agent processes on
// kspool-devkafka, SIGKILL, a consumer over every partition, GetDeliveryStatus.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "base/mutex.h"
#include "tests/integration/exactly_once.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::Copy;
using kspool::testing::DevKafka;
using kspool::testing::ReadCopies;
using kspool::testing::ReconcileLines;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::vector<std::string> kArgs = {"--max-message-age", "2s"};
constexpr auto kLaterThanTheAge = 2500ms;

// `n` messages to each of `topics`, every third keyed; what was acknowledged.
std::map<uint64_t, std::string> SendMixed(AgentProcess& agent,
                                          const std::vector<std::string>& topics, int n,
                                          int round) {
  kspool::v1::SendRequest req;
  for (int i = 0; i < n; ++i) {
    for (const std::string& t : topics) {
      auto* m = req.add_messages();
      m->set_topic(t);
      m->set_value("r" + std::to_string(round) + "-" + std::to_string(i));
      if (i % 3 == 0) m->set_key("k" + std::to_string(i % 11));
    }
  }
  kspool::v1::SendResponse resp;
  std::map<uint64_t, std::string> acked;
  if (!agent.Send(req, &resp).ok()) return acked;
  for (int i = 0; i < resp.sequence_size(); ++i) acked[resp.sequence(i)] = req.messages(i).topic();
  return acked;
}

double Discarded(AgentProcess& agent) {
  double total = 0;
  for (const auto& [name, v] : kspool::testing::ScrapeMetrics(agent.http_address())) {
    if (name.rfind("kspool_messages_discarded_total", 0) == 0) total += v;
  }
  return total;
}

// The settled watermarks of a WAL no agent holds, by "topic/partition".
std::map<std::string, int64_t> Watermarks(const std::string& dir) {
  wal::Options o;
  o.dir = dir;
  auto opened = wal::Wal::Open(o);
  EXPECT_TRUE(opened.ok()) << opened.status();
  std::map<std::string, int64_t> out;
  if (!opened.ok()) return out;
  auto w = (**opened).Watermarks();
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return out;
  for (const wal::Watermark& x : *w) out[x.topic + "/" + std::to_string(x.partition)] = x.offset;
  return out;
}

class ReconcileAgeE2E : public ::testing::Test {
 protected:
  void Kill(std::unique_ptr<AgentProcess>& agent) {
    agent->process().Signal(SIGKILL);
    ASSERT_TRUE(agent->process().Wait(10s).has_value());
    agent.reset();
  }
  kspool::testing::TempDir dir_;
  const std::string wal_ = dir_.sub("wal");
  const std::string log_ = dir_.sub("agent.log");
};

// Every entry of the WAL is in Kafka with its settle lost (a copy of the WAL taken before
// delivery, put back), and the restart comes after the age limit: each is settled as
// delivered where Kafka holds it, none discarded or dead-lettered, none produced again;
// the watermarks then move with new deliveries.
TEST_F(ReconcileAgeE2E, CopiesInKafkaAreSettledDeliveredNotExpired) {
  DevKafka kafka(dir_.path(), 3, {"au:3", "ak:3"});
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), kArgs);
  std::map<uint64_t, std::string> acked = SendMixed(*agent, {"au", "ak"}, 30, 0);
  ASSERT_TRUE(agent->WaitUntilDrained(10s));  // every partition gets a watermark
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  std::map<uint64_t, std::string> in_doubt = SendMixed(*agent, {"au", "ak"}, 150, 1);
  ASSERT_EQ(in_doubt.size(), 300u);
  Kill(agent);
  const std::string before = dir_.sub("wal-before");
  fs::copy(wal_, before, fs::copy_options::recursive);
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), kArgs);
  ASSERT_TRUE(agent->WaitUntilDrained(20s));
  Kill(agent);
  const std::map<std::string, int64_t> marks_before = Watermarks(before);
  fs::remove_all(wal_);
  fs::copy(before, wal_, fs::copy_options::recursive);

  std::this_thread::sleep_for(kLaterThanTheAge);
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), kArgs);
  ASSERT_TRUE(agent->WaitUntilDrained(20s)) << ReconcileLines(log_);
  acked.merge(in_doubt);
  auto copies = ReadCopies(kafka.bootstrap(), {"au", "ak"}, acked.size());
  EXPECT_EQ(kspool::testing::CheckExactlyOnce(*agent, acked, copies), 0u) << ReconcileLines(log_);
  auto metrics = kspool::testing::ScrapeMetrics(agent->http_address());
  EXPECT_EQ(metrics["kspool_reconcile_found_total"], 300);
  EXPECT_EQ(Discarded(*agent), 0) << "expired though Kafka holds them";
  EXPECT_EQ(metrics["kspool_dead_letters"], 0);

  // The watermarks move again: after new deliveries, each partition's is the highest
  // offset Kafka holds there (frozen, it stayed at or below the put-back copies').
  acked.merge(SendMixed(*agent, {"au", "ak"}, 60, 2));
  ASSERT_TRUE(agent->WaitUntilDrained(10s));
  Kill(agent);
  std::map<std::string, int64_t> highest;
  for (const auto& [seq, all] : ReadCopies(kafka.bootstrap(), {"au", "ak"}, acked.size())) {
    for (const Copy& c : all) {
      int64_t& h = highest[c.topic + "/" + std::to_string(c.partition)];
      h = std::max(h, c.offset);
    }
  }
  const std::map<std::string, int64_t> marks_after = Watermarks(wal_);
  EXPECT_EQ(marks_after, highest);
  for (const auto& [where, offset] : marks_after) {
    EXPECT_GT(offset, marks_before.count(where) ? marks_before.at(where) : -1) << where;
  }
}

// Unkeyed and keyed load, SIGKILL mid-load, a restart later than the age limit: what
// Kafka holds is delivered where it is (once); only what it does not hold may be
// discarded as expired, and each such message is in no partition.
TEST_F(ReconcileAgeE2E, AfterAKillMidLoadOnlyWhatKafkaLacksExpires) {
  DevKafka kafka(dir_.path(), 3, {"mu:3", "mk:3"});
  auto agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), kArgs);
  std::map<uint64_t, std::string> acked = SendMixed(*agent, {"mu", "mk"}, 30, 0);
  ASSERT_TRUE(agent->WaitUntilDrained(10s));
  Mutex mu;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 2; ++c) {
    clients.emplace_back([&, c] {
      for (int n = 1; !stop; ++n) {
        std::map<uint64_t, std::string> got = SendMixed(*agent, {"mu", "mk"}, 20, c * 100000 + n);
        MutexLock l(&mu);
        acked.merge(got);
      }
    });
  }
  std::this_thread::sleep_for(800ms + std::chrono::milliseconds(std::random_device{}() % 400));
  agent->process().Signal(SIGKILL);
  ASSERT_TRUE(agent->process().Wait(10s).has_value());
  stop = true;
  for (auto& t : clients) t.join();
  agent.reset();

  std::this_thread::sleep_for(kLaterThanTheAge);
  agent = std::make_unique<AgentProcess>(wal_, log_, kafka.bootstrap(), kArgs);
  ASSERT_TRUE(agent->WaitUntilDrained(20s)) << ReconcileLines(log_);
  auto copies = ReadCopies(kafka.bootstrap(), {"mu", "mk"}, acked.size());
  std::vector<uint64_t> seqs;
  size_t duplicates = 0;
  for (const auto& [seq, topic] : acked) {
    seqs.push_back(seq);
    if (copies.count(seq)) duplicates += copies[seq].size() - 1;
  }
  EXPECT_EQ(duplicates, 0u) << ReconcileLines(log_);
  size_t delivered = 0, expired = 0;
  for (size_t i = 0; i < seqs.size(); i += 5000) {
    kspool::v1::GetDeliveryStatusRequest req;
    for (size_t k = i; k < std::min(seqs.size(), i + 5000); ++k) req.add_sequences(seqs[k]);
    kspool::v1::GetDeliveryStatusResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    ASSERT_TRUE(agent->spool().GetDeliveryStatus(&ctx, req, &resp).ok());
    for (const kspool::v1::DeliveryStatus& st : resp.statuses()) {
      auto c = copies.find(st.sequence());
      if (c == copies.end()) {
        EXPECT_EQ(st.state(), kspool::v1::DeliveryStatus::DISCARDED) << st.sequence() << " lost";
        EXPECT_EQ(st.discard_reason(), "expired") << st.sequence();
        ++expired;
        continue;
      }
      const Copy& k = c->second.front();
      ASSERT_EQ(st.state(), kspool::v1::DeliveryStatus::DELIVERED)
          << "seq " << st.sequence() << " is in " << k.topic << "[" << k.partition << "]@"
          << k.offset << " but reported " << st.discard_reason() << "\n"
          << ReconcileLines(log_);
      EXPECT_EQ(st.partition(), k.partition) << st.sequence();
      EXPECT_EQ(st.offset(), k.offset) << st.sequence();
      ++delivered;
    }
  }
  EXPECT_EQ(delivered + expired, acked.size());
  EXPECT_GT(acked.size(), 500u);
  std::printf(
      "acked=%zu delivered=%zu expired (never in Kafka)=%zu found=%.0f\n", acked.size(), delivered,
      expired,
      kspool::testing::ScrapeMetrics(agent->http_address())["kspool_reconcile_found_total"]);
}

}  // namespace
}  // namespace kspool
