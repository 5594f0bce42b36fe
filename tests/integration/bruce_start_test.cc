// The Bruce/Dory input's sockets at start: their file mode, a live socket that a second
// agent must not take over, TCP only on loopback, and PartitionKey messages that wait
// (reading paused) while Kafka cannot say how many partitions their topic has.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "tests/support/agent_process.h"
#include "tests/support/bruce_format.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ChildProcess;
using kspool::testing::DevKafka;
using namespace std::chrono_literals;

class BruceStart : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 1, std::vector<std::string>{"keyed:5"});
  }
  std::unique_ptr<AgentProcess> Agent(const std::string& wal, std::vector<std::string> args) {
    return std::make_unique<AgentProcess>(dir_.sub(wal), dir_.sub(wal + ".log"),
                                          kafka_->bootstrap(), std::move(args));
  }
  // Starts an agent expected to refuse to start; returns its exit code and log.
  std::pair<int, std::string> FailedStart(std::vector<std::string> args) {
    std::vector<std::string> argv = {KSPOOL_AGENT_BIN,  "--wal-dir",         dir_.sub("wal-fail"),
                                     "--kafka-brokers", kafka_->bootstrap(), "--listen",
                                     "127.0.0.1:0",     "--metrics-listen",  "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, dir_.sub("fail.log"));
    std::optional<int> status = p.Wait(30s);
    std::ifstream in(dir_.sub("fail.log"));
    std::stringstream log;
    log << in.rdbuf();
    return {status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, log.str()};
  }
  double Metric(AgentProcess& a, const std::string& series) {
    auto m = kspool::testing::ScrapeMetrics(a.http_address());
    auto it = m.find(series);
    return it == m.end() ? -1 : it->second;
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
};

TEST_F(BruceStart, SocketFilesGetMode0660ByDefaultAndTheModeAsked) {
  auto a = Agent("wal", {"--bruce-datagram-socket", dir_.sub("d.sock"), "--bruce-stream-socket",
                         dir_.sub("s.sock")});
  struct stat st {};
  ASSERT_EQ(stat(dir_.sub("d.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  ASSERT_EQ(stat(dir_.sub("s.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  auto b = Agent("wal2",
                 {"--bruce-datagram-socket", dir_.sub("d2.sock"), "--bruce-socket-mode", "0600"});
  ASSERT_EQ(stat(dir_.sub("d2.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(BruceStart, ASecondAgentCannotTakeOverALiveDatagramSocket) {
  auto a = Agent("wal", {"--bruce-datagram-socket", dir_.sub("d.sock")});
  auto [code, log] = FailedStart({"--bruce-datagram-socket", dir_.sub("d.sock")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(log.find("another process receives on this socket"), std::string::npos) << log;
  // The first agent still owns it.
  const int fd = kspool::testing::ConnectUnix(dir_.sub("d.sock"), SOCK_DGRAM);
  close(fd);
}

TEST_F(BruceStart, TcpIsRefusedOnAnAddressThatIsNotLoopback) {
  auto [code, log] = FailedStart({"--bruce-tcp", "0.0.0.0:0"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(log.find("only loopback addresses"), std::string::npos) << log;
}

TEST_F(BruceStart, ABadSocketModeIsAUsageError) {
  auto [code, log] =
      FailedStart({"--bruce-datagram-socket", dir_.sub("d.sock"), "--bruce-socket-mode", "0698"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("--bruce-socket-mode"), std::string::npos) << log;
}

TEST_F(BruceStart, PartitionKeyMessagesWaitWhileKafkaCannotNameThePartitionCount) {
  ASSERT_EQ(kafka_->Command("broker down all"), "OK");
  auto a = Agent("wal", {"--bruce-datagram-socket", dir_.sub("d.sock"), "--kafka-option",
                         "reconnect.backoff.max.ms=200"});
  const int fd = kspool::testing::ConnectUnix(dir_.sub("d.sock"), SOCK_DGRAM);
  kspool::testing::SendAll(fd, kspool::testing::PartitionKey(7, "keyed", 1, "", "waited"));
  close(fd);
  // Counted and logged as a degraded mode; nothing is in the WAL yet.
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] {
        return Metric(*a, "kspool_degraded_events_total{event=\"bruce_partition_count_wait\"}") ==
               1;
      },
      10s));
  EXPECT_EQ(a->WalStats().entries(), 0u);
  ASSERT_EQ(kafka_->Command("broker up all"), "OK");
  auto got = kspool::testing::ReadTopic(kafka_->bootstrap(), "keyed", 1, 30s);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "waited");
  EXPECT_EQ(got[0].partition, 7 % 5);
}

}  // namespace
}  // namespace kspool

namespace kspool {
namespace {

TEST_F(BruceStart, StreamClientsHoldingTooMuchUnfinishedAreCutAndTheInputGoesOn) {
  auto a = Agent("wal", {"--bruce-datagram-socket", dir_.sub("d.sock"), "--bruce-stream-socket",
                         dir_.sub("s.sock")});
  // 40 clients each start a 2 MiB message and stop 1.9 MiB into it: 76 MiB unfinished,
  // over the 64 MiB bound.
  std::string head;
  kspool::testing::PutBE(&head, 2u << 20, 4);
  const std::string part = head + std::string((19u << 20) / 10, 'p');
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) {
    const int fd = kspool::testing::ConnectUnix(dir_.sub("s.sock"), SOCK_STREAM);
    fds.push_back(fd);
    try {
      kspool::testing::SendAll(fd, part);
    } catch (const std::exception&) {
      // this connection was the one cut
    }
  }
  ASSERT_TRUE(kspool::testing::WaitUntil(
      [&] {
        return Metric(*a, "kspool_degraded_events_total{event=\"bruce_stream_memory\"}") >= 1;
      },
      10s));
  for (int fd : fds) close(fd);
  // The input still takes messages.
  const int d = kspool::testing::ConnectUnix(dir_.sub("d.sock"), SOCK_DGRAM);
  kspool::testing::SendAll(d, kspool::testing::AnyPartition("keyed", 1, "", "after"));
  close(d);
  EXPECT_TRUE(kspool::testing::WaitUntil(
      [&] { return Metric(*a, "kspool_bruce_messages_total{transport=\"datagram\"}") == 1; }, 10s));
}

}  // namespace
}  // namespace kspool
