// kspoolctl on the WAL of a running agent that keeps accepting Sends: the read-only
// commands succeed and see a consistent snapshot (verify passes, counts within what was
// acknowledged), and the agent never notices them.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CtlResult;
using kspool::testing::DevKafka;
using kspool::testing::RunCtl;
using kspool::testing::WaitUntil;
using namespace std::chrono_literals;

TEST(LiveWalTest, InspectionWhileTheAgentKeepsAcceptingSends) {
  kspool::testing::TempDir tmp;
  const std::string wal = tmp.sub("wal");
  DevKafka kafka(tmp.path(), 1, {"live:4"});
  ASSERT_EQ(kafka.Command("broker down all"), "OK");  // so the WAL only grows
  AgentProcess agent(wal, tmp.sub("agent.log"), kafka.bootstrap());

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> acked{0}, failures{0};
  // The sender stops when told, or at its deadline if the test ends early (a failed
  // ASSERT): the guard below then stops and joins it.
  const auto sender_deadline = std::chrono::steady_clock::now() + 120s;
  std::thread sender([&] {
    for (int n = 0; !stop && std::chrono::steady_clock::now() < sender_deadline; ++n) {
      kspool::v1::SendRequest req;
      for (int i = 0; i < 10; ++i) {
        auto* m = req.add_messages();
        m->set_topic("live");
        m->set_key("k" + std::to_string(i));
        m->set_value("message " + std::to_string(n) + "-" + std::to_string(i));
      }
      kspool::v1::SendResponse resp;
      if (agent.Send(req, &resp).ok()) acked += 10;
      else ++failures;
      std::this_thread::sleep_for(2ms);
    }
  });
  struct StopSender {
    std::atomic<bool>* stop;
    std::thread* sender;
    ~StopSender() {
      *stop = true;
      if (sender->joinable()) sender->join();
    }
  } stop_sender{&stop, &sender};
  ASSERT_TRUE(WaitUntil([&] { return acked >= 500; }, 30s))
      << "acked " << acked << ", failed Sends " << failures;

  const uint64_t acked_at_start = acked;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const uint64_t before = acked;
    CtlResult stats = RunCtl({"--json", "wal", "stats", wal}, tmp.path());
    const uint64_t after = acked;
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    nlohmann::json j = nlohmann::json::parse(stats.out);
    EXPECT_GE(j["entries"].get<uint64_t>(), before);
    EXPECT_LE(j["entries"].get<uint64_t>(), after + 10) << "at most the Send in flight";
    EXPECT_EQ(j["topics"]["live"]["accepted"]["count"], j["entries"]);

    CtlResult list = RunCtl({"wal", "list", wal, "--from", std::to_string(before / 2), "--limit", "25"},
                            tmp.path());
    ASSERT_EQ(list.exit_code, 0) << list.err;
    EXPECT_EQ(std::count(list.out.begin(), list.out.end(), '\n'), 26) << list.out;

    CtlResult verify = RunCtl({"wal", "verify", wal}, tmp.path());
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  }
  EXPECT_GT(acked.load(), acked_at_start) << "Sends kept being accepted meanwhile";
  stop = true;
  sender.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(agent.WalStats().entries(), acked.load()) << "nothing the agent holds went missing";
}

}  // namespace
}  // namespace kspool
