// The agent on a real full file system: a small tmpfs mounted by the test holds the WAL,
// filled either by the agent's own WAL (Kafka down, a capacity larger than the volume)
// or by another file. The agent never aborts, refuses Sends with UNAVAILABLE or
// RESOURCE_EXHAUSTED while nothing fits, keeps RocksDB's logs off the volume, exits 0 on
// SIGTERM, and delivers every acknowledged message once Kafka returns. A restart on a
// full volume opens the WAL by releasing its reserve (KSPOOL_RESERVE) and refuses Sends
// (UNAVAILABLE, no_reserve) until the volume has room for the reserve again; a first
// start on a full volume is refused, naming the volume. Mounting needs root: CI runs as
// root; elsewhere the tests skip, saying so.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/child_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tmpfs_volume.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::TableBytes;
using kspool::testing::TmpfsVolume;
using kspool::testing::WaitUntil;
using namespace std::chrono_literals;

constexpr int kVolumeMiB = 48;

// Sends messages with unique ids and incompressible values, keeping the ids acknowledged.
class Sender {
 public:
  explicit Sender(std::string topic) : topic_(std::move(topic)) {}
  // One request of `count` messages of `bytes` each; returns its status.
  grpc::Status Send(AgentProcess& agent, int count, size_t bytes) {
    kspool::v1::SendRequest req;
    std::vector<std::string> ids;
    for (int i = 0; i < count; ++i) {
      ids.push_back("id-" + std::to_string(next_id_++));
      std::string value = ids.back() + ":";
      value.reserve(bytes);
      while (value.size() < bytes) value.push_back(static_cast<char>(rng_()));
      auto* m = req.add_messages();
      m->set_topic(topic_);
      m->set_key(ids.back());  // spread over the partitions: the test cluster keeps ~5 MB each
      m->set_value(std::move(value));
    }
    kspool::v1::SendResponse resp;
    grpc::Status s = agent.Send(req, &resp, 5000);
    if (s.ok()) acked_.insert(ids.begin(), ids.end());
    return s;
  }
  const std::set<std::string>& acked() const { return acked_; }

 private:
  const std::string topic_;
  std::mt19937 rng_{42};
  uint64_t next_id_ = 0;
  std::set<std::string> acked_;
};

// The last lines of the agent's log, for a failure message (the log goes with the test).
std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > 40) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

bool RefusedForSpace(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// The value of an unlabelled metric, as /metrics shows it.
std::string Metric(AgentProcess& agent, const std::string& name) {
  const std::string body = kspool::testing::HttpGet(agent.http_address(), "/metrics").body;
  const size_t at = body.find("\n" + name + " ");
  if (at == std::string::npos) return "absent";
  const size_t from = at + name.size() + 2;
  return body.substr(from, body.find('\n', from) - from);
}

// RocksDB's info log files (LOG, LOG.old.*) in the WAL directory.
int InfoLogFiles(const std::string& wal) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(wal, ec)) {
    if (e.path().filename().string().rfind("LOG", 0) == 0) ++n;
  }
  return n;
}

// SIGTERM, then the agent must exit by itself with status 0.
void ExpectCleanExit(AgentProcess& agent) {
  agent.process().Signal(SIGTERM);
  std::optional<int> status = agent.process().Wait(20s);
  ASSERT_TRUE(status.has_value()) << "the agent did not exit within 20 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << "exit status " << *status
      << (WIFSIGNALED(*status) ? " (killed by signal " + std::to_string(WTERMSIG(*status)) + ")"
                               : std::string());
}

// A Send refused because the WAL's reserve is missing: UNAVAILABLE, naming the reason.
void ExpectRefusedForNoReserve(const grpc::Status& s, const std::string& log) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message() << LogTail(log);
  EXPECT_NE(s.error_message().find("no_reserve"), std::string::npos) << s.error_message();
}

void ExpectAllDelivered(const std::string& brokers, const std::string& topic,
                        const std::set<std::string>& acked) {
  auto records = kspool::testing::ReadTopic(brokers, topic, acked.size(), 30s);
  std::set<std::string> delivered;
  for (const auto& r : records) delivered.insert(r.value.substr(0, r.value.find(':')));
  size_t missing = 0;
  for (const auto& id : acked) missing += delivered.count(id) == 0;
  EXPECT_EQ(missing, 0u) << "of " << acked.size() << " acknowledged messages";
}

class FullDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!volume_.error().empty()) GTEST_SKIP() << volume_.error();
  }
  TmpfsVolume volume_{kVolumeMiB};
  kspool::testing::TempDir logs_;
};

TEST_F(FullDisk, AWalLargerThanTheVolumeFillsItAndARestartOnItOpensDrainsAndAcceptsAgain) {
  DevKafka kafka(logs_.path(), 1, {"t:16"});
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  const std::string wal = volume_.sub("wal"), log = logs_.sub("agent.log");
  // The largest reserve the volume allows: free space comes and goes by megabytes as
  // RocksDB preallocates and releases room for its log.
  const std::vector<std::string> args = {"--wal-max-bytes", "1073741824",
                                         "--wal-reopen-interval-ms", "100",
                                         "--wal-reserve-bytes", "12MiB"};
  auto agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  Sender sender("t");
  grpc::Status refused;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    grpc::Status s = sender.Send(*agent, 8, 32 << 10);
    if (!s.ok()) {
      refused = s;
      break;
    }
  }
  ASSERT_TRUE(RefusedForSpace(refused))
      << refused.error_code() << " " << refused.error_message() << "; "
      << sender.acked().size() << " acknowledged, " << volume_.free_bytes() << " bytes free";
  EXPECT_GT(sender.acked().size(), 100u);
  // Full: every Send is refused for space, the agent retries its WAL, and stays up.
  for (int i = 0; i < 20; ++i) {
    grpc::Status s = sender.Send(*agent, 4, 32 << 10);
    EXPECT_TRUE(s.ok() || RefusedForSpace(s)) << s.error_code() << " " << s.error_message();
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(agent->process().running()) << LogTail(log);
  EXPECT_EQ(InfoLogFiles(wal), 0) << "RocksDB's info log stays off the full volume";
  ExpectCleanExit(*agent);

  // A restart on the volume its own WAL filled opens the WAL in the room of its reserve
  // (RocksDB flushes what it replays, and that needs room), and refuses Sends so that
  // the room left goes to draining.
  agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  // Refused at once, as a rule. When the WAL's first ENOSPC came early (a flush needs
  // room for what it writes before the log it replaces is deleted), the restarted agent
  // finds room for its reserve and as much again: it takes Sends until the WAL runs out
  // of space, then releases the reserve.
  grpc::Status s = sender.Send(*agent, 1, 1024);
  for (auto until = std::chrono::steady_clock::now() + 20s;
       s.error_message().find("no_reserve") == std::string::npos &&
       std::chrono::steady_clock::now() < until;) {
    EXPECT_TRUE(s.ok() || RefusedForSpace(s)) << s.error_code() << " " << s.error_message();
    s = sender.Send(*agent, 8, 32 << 10);
  }
  ExpectRefusedForNoReserve(s, log);
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  EXPECT_TRUE(agent->WaitUntilDrained(40s)) << agent->WalStats().entries() << " entries left";
  ExpectAllDelivered(kafka.bootstrap(), "t", sender.acked());
  // Draining alone frees the volume: the delivered range is compacted away, the reserve
  // is made again once there is room for it and as much again, and Sends are accepted.
  EXPECT_TRUE(WaitUntil([&] { return sender.Send(*agent, 1, 1024).ok(); }, 20s))
      << volume_.free_bytes() << " bytes free, " << TableBytes(wal) << " in table files"
      << LogTail(log);
  // Compactions delete them in the background (slower on a loaded machine, under ASan).
  EXPECT_TRUE(WaitUntil([&] { return TableBytes(wal) < (4u << 20); }, 20s))
      << TableBytes(wal) << " bytes in table files: the delivered entries' are not gone";
  EXPECT_EQ(InfoLogFiles(wal), 0);
  ExpectCleanExit(*agent);
}

TEST_F(FullDisk, AVolumeFilledByAnotherFileKeepsTheAgentUpAndEverythingAckedIsDelivered) {
  DevKafka kafka(logs_.path(), 1, {"t:16"});
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  const std::string wal = volume_.sub("wal"), log = logs_.sub("agent.log");
  const std::vector<std::string> args = {"--wal-reopen-interval-ms", "100"};
  auto agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  Sender sender("t");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(sender.Send(*agent, 10, 1024).ok());
  ASSERT_GT(volume_.Fill("filler"), 0u);
  // The volume is full: Sends go into space RocksDB set aside for its log file until
  // that is used up or the capacity is reached, then they are refused.
  grpc::Status refused;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (refused.ok() && std::chrono::steady_clock::now() < deadline) {
    refused = sender.Send(*agent, 8, 32 << 10);
  }
  ASSERT_TRUE(RefusedForSpace(refused))
      << refused.error_code() << " " << refused.error_message() << "; "
      << sender.acked().size() << " acknowledged, " << volume_.free_bytes() << " bytes free";
  for (int i = 0; i < 20; ++i) {
    grpc::Status s = sender.Send(*agent, 4, 16 << 10);
    EXPECT_TRUE(s.ok() || RefusedForSpace(s)) << s.error_code() << " " << s.error_message();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(agent->process().running()) << LogTail(log);
  EXPECT_EQ(InfoLogFiles(wal), 0);
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  EXPECT_TRUE(agent->WaitUntilDrained(30s)) << agent->WalStats().entries() << " entries left";
  ExpectAllDelivered(kafka.bootstrap(), "t", sender.acked());
  ExpectCleanExit(*agent);

  // Still full: a restart starts (what the drain deleted, and the reserve's room, are
  // enough to open) and answers, accepting or refusing for space.
  agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  grpc::Status s = sender.Send(*agent, 1, 1024);
  EXPECT_TRUE(s.ok() || RefusedForSpace(s)) << s.error_code() << " " << s.error_message();
  volume_.Remove("filler");
  EXPECT_TRUE(WaitUntil([&] { return sender.Send(*agent, 1, 1024).ok(); }, 20s));
  EXPECT_TRUE(agent->WaitUntilDrained(30s));
  ExpectAllDelivered(kafka.bootstrap(), "t", sender.acked());
  EXPECT_EQ(InfoLogFiles(wal), 0);
  ExpectCleanExit(*agent);
}

TEST_F(FullDisk, AVolumeWithNoByteLeftRefusesSendsAndIsDrainedOnceSpaceReturns) {
  DevKafka kafka(logs_.path(), 1, {"t:16"});
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  const std::string wal = volume_.sub("wal"), log = logs_.sub("agent.log");
  const std::vector<std::string> args = {"--wal-max-bytes", "1073741824",
                                         "--wal-reopen-interval-ms", "100"};
  auto agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  Sender sender("t");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(sender.Send(*agent, 10, 1024).ok());
  ASSERT_GT(volume_.Fill("filler"), 0u);
  // The capacity is not what stops Sends here: the disk is.
  grpc::Status refused;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (refused.ok() && std::chrono::steady_clock::now() < deadline) {
    refused = sender.Send(*agent, 8, 32 << 10);
  }
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE)
      << refused.error_message() << "; " << sender.acked().size() << " acknowledged";
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  // The WAL reopens in its reserve's room and drains, which frees space: Sends are
  // refused until the reserve is made again.
  for (int i = 0; i < 20; ++i) {
    grpc::Status s = sender.Send(*agent, 4, 16 << 10);
    EXPECT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::UNAVAILABLE) << s.error_message();
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(agent->process().running()) << LogTail(log);
  EXPECT_EQ(InfoLogFiles(wal), 0);
  ExpectCleanExit(*agent);

  // With the other file still there, a restart starts (opening replays RocksDB's log
  // files into memory, and the drain deleted what Kafka took), drains, and answers
  // Sends, accepting or refusing for space; once the file goes, it accepts.
  agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  EXPECT_TRUE(agent->WaitUntilDrained(30s)) << agent->WalStats().entries() << " entries left";
  grpc::Status s = sender.Send(*agent, 1, 1024);
  EXPECT_TRUE(s.ok() || RefusedForSpace(s)) << s.error_code() << " " << s.error_message();
  volume_.Remove("filler");
  EXPECT_TRUE(WaitUntil([&] { return sender.Send(*agent, 1, 1024).ok(); }, 20s)) << LogTail(log);
  EXPECT_TRUE(agent->WaitUntilDrained(30s));
  ExpectAllDelivered(kafka.bootstrap(), "t", sender.acked());
  EXPECT_EQ(InfoLogFiles(wal), 0);
  ExpectCleanExit(*agent);
}

TEST_F(FullDisk, ARestartOnAVolumeFilledByAnotherFileOpensDrainsAndAcceptsOnceItIsFreed) {
  DevKafka kafka(logs_.path(), 1, {"t:16"});
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  const std::string wal = volume_.sub("wal"), log = logs_.sub("agent.log");
  const std::vector<std::string> args = {"--wal-reopen-interval-ms", "100"};
  auto agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  Sender sender("t");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(sender.Send(*agent, 10, 4096).ok());
  ExpectCleanExit(*agent);
  ASSERT_GT(volume_.Fill("filler"), 0u);

  agent = std::make_unique<AgentProcess>(wal, log, kafka.bootstrap(), args);
  ExpectRefusedForNoReserve(sender.Send(*agent, 1, 1024), log);
  EXPECT_EQ(Metric(*agent, "kspool_wal_reserve_missing"), "1");
  EXPECT_EQ(Metric(*agent, "kspool_wal_reserve_bytes"), "0");
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  EXPECT_TRUE(agent->WaitUntilDrained(30s)) << agent->WalStats().entries() << " entries left";
  ExpectAllDelivered(kafka.bootstrap(), "t", sender.acked());
  // Draining freed little: still refused until the other file goes.
  ExpectRefusedForNoReserve(sender.Send(*agent, 1, 1024), log);
  volume_.Remove("filler");
  EXPECT_TRUE(WaitUntil([&] { return sender.Send(*agent, 1, 1024).ok(); }, 10s)) << LogTail(log);
  EXPECT_EQ(Metric(*agent, "kspool_wal_reserve_missing"), "0");
  EXPECT_EQ(Metric(*agent, "kspool_wal_reserve_bytes"), std::to_string(4 << 20));
  EXPECT_EQ(InfoLogFiles(wal), 0);
  ExpectCleanExit(*agent);
}

TEST_F(FullDisk, AFirstStartOnAFullVolumeIsRefusedNamingTheVolume) {
  ASSERT_GT(volume_.Fill("filler"), 0u);
  const std::string log = logs_.sub("agent.log");
  kspool::testing::ChildProcess agent(
      std::vector<std::string>{KSPOOL_AGENT_BIN, "--wal-dir", volume_.sub("wal"), "--kafka-brokers", "127.0.0.1:1",
       "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--wal-reserve-bytes",
       "4MiB"},
      log);
  std::optional<int> status = agent.Wait(20s);
  ASSERT_TRUE(status.has_value()) << "still running" << LogTail(log);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << "status " << *status << LogTail(log);
  const std::string tail = LogTail(log);
  EXPECT_NE(tail.find("cannot start"), std::string::npos) << tail;
  EXPECT_NE(tail.find("mounted at " + volume_.path() + ")"), std::string::npos) << tail;
  EXPECT_NE(tail.find("--wal-reserve-bytes"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("Assertion"), std::string::npos) << tail;
  // Once the volume has room, it starts.
  volume_.Remove("filler");
  AgentProcess started(volume_.sub("wal"), logs_.sub("agent2.log"), "127.0.0.1:1", {});
  EXPECT_TRUE(started.process().running());
}

}  // namespace
}  // namespace kspool
