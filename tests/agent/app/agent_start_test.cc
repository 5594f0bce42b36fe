// Agent::Start on a WAL directory it cannot use: an error status naming the directory,
// never an exception (an uncaught std::filesystem_error aborted the agent, exit 134).
#include <gtest/gtest.h>

#include <fstream>

#include "agent/app/agent.h"
#include "tests/support/temp_dir.h"

namespace kspool::agent {
namespace {

Config Unreachable(const std::string& wal_dir) {
  Config c;
  c.wal.dir = wal_dir;
  c.listen = "127.0.0.1:0";
  c.metrics_listen = "127.0.0.1:0";
  c.kafka_brokers = "127.0.0.1:1";
  return c;
}

TEST(AgentStart, EmptyWalDirIsAnErrorNotAnException) {
  absl::StatusOr<std::unique_ptr<Agent>> a = Agent::Start(Unreachable(""));
  EXPECT_FALSE(a.ok());
}

TEST(AgentStart, WalDirUnderARegularFileIsAnErrorNamingIt) {
  kspool::testing::TempDir dir;
  const std::string file = dir.sub("not-a-dir");
  std::ofstream(file) << "x";
  absl::StatusOr<std::unique_ptr<Agent>> a = Agent::Start(Unreachable(file + "/wal"));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find(file + "/wal"), std::string::npos) << a.status();
}

}  // namespace
}  // namespace kspool::agent
