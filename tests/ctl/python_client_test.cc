// The Python example (examples/python/client.py) against a real agent and
// kspool-devkafka: its stubs are generated from proto/ into the build tree
// (gen_stubs.sh), it runs under Debian's python3 with python3-grpcio, and every check
// reads what the example printed, so a broken example fails here.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ChildProcess;
using kspool::testing::DevKafka;
using kspool::testing::WaitUntil;
using namespace std::chrono_literals;

// "seq=5 state=DELIVERED partition=1 offset=42" -> {seq: 5, state: DELIVERED, ...}.
std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> f;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) f[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return f;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PythonClientTest : public ::testing::Test {
 protected:
  // client.py with the agent's address and the generated stubs; stderr to a file.
  std::unique_ptr<ChildProcess> Start(const std::string& address, std::vector<std::string> args) {
    std::vector<std::string> argv = {KSPOOL_PYTHON3, KSPOOL_PY_CLIENT, "--agent", address,
                                     "--stubs", KSPOOL_PY_STUBS};
    argv.insert(argv.end(), args.begin(), args.end());
    err_path_ = tmp_.sub("client-" + std::to_string(runs_++) + ".err");
    return std::make_unique<ChildProcess>(argv, err_path_,
                                          std::vector<std::string>{"PYTHONDONTWRITEBYTECODE=1"});
  }

  struct Result {
    int exit_code = -1;
    std::vector<std::string> lines;
    std::string err;
  };
  // Runs client.py to its end (bounded: 60 s).
  Result Run(const std::string& address, std::vector<std::string> args) {
    auto child = Start(address, std::move(args));
    return Finish(*child);
  }
  Result Finish(ChildProcess& child) {
    Result r;
    while (auto line = child.WaitForLine("", 60s)) r.lines.push_back(*line);
    std::optional<int> status = child.Wait(60s);
    if (status && WIFEXITED(*status)) r.exit_code = WEXITSTATUS(*status);
    r.err = ReadFile(err_path_);
    return r;
  }

  kspool::testing::TempDir tmp_;
  std::string err_path_;
  int runs_ = 0;
};

TEST_F(PythonClientTest, SendWaitsForKafkaAndPrintsWhereEachMessageIs) {
  DevKafka kafka(tmp_.path(), 1, {"py:3"});
  AgentProcess agent(tmp_.sub("wal"), tmp_.sub("agent.log"), kafka.bootstrap());
  std::vector<std::string> values = {"alpha", "bravo", "charlie", "delta", "echo"};
  std::vector<std::string> args = {"send", "--topic", "py", "--wait", "kafka"};
  args.insert(args.end(), values.begin(), values.end());
  Result r = Run(agent.address(), args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.lines.size(), values.size()) << r.err;

  std::vector<kspool::testing::ConsumedRecord> records =
      kspool::testing::ReadTopic(kafka.bootstrap(), "py", values.size(), 30s);
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE(r.lines[i]);
    auto f = Fields(r.lines[i]);
    EXPECT_EQ(f["state"], "DELIVERED");
    EXPECT_EQ(f["topic"], "py");
    ASSERT_TRUE(f.count("partition") && f.count("offset"));
    const int32_t partition = std::stoi(f["partition"]);
    const int64_t offset = std::stoll(f["offset"]);
    auto at = std::find_if(records.begin(), records.end(), [&](const auto& rec) {
      return rec.partition == partition && rec.offset == offset;
    });
    ASSERT_NE(at, records.end()) << "no record at the printed partition and offset";
    EXPECT_EQ(at->value, values[i]);
    EXPECT_EQ(std::to_string(at->seq), f["seq"]);
  }

  // The feed from 1: the same outcomes, in sequence order.
  Result w = Run(agent.address(), {"watch", "--from", "1", "--count", std::to_string(values.size())});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(w.lines, r.lines) << w.err;
}

// Kafka down and the WAL full: the Send is refused with RESOURCE_EXHAUSTED and a
// retry-after-ms hint; the client waits exactly that long (capped), tries again, and
// once Kafka is back and the WAL drains, its Send succeeds with partition and offset.
TEST_F(PythonClientTest, RetriesAFullWalAfterTheAgentsRetryAfterHint) {
  DevKafka kafka(tmp_.path(), 1, {"full:1"});
  ASSERT_EQ(kafka.Command("broker down all"), "OK");
  AgentProcess agent(tmp_.sub("wal"), tmp_.sub("agent.log"), kafka.bootstrap(),
                     {"--wal-max-bytes", "20000"});
  int filled = 0;
  for (bool full = false; !full && filled < 200; ++filled) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic("full");
    m->set_value(std::string(500, 'f'));
    kspool::v1::SendResponse resp;
    grpc::Status s = agent.Send(req, &resp);
    full = s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    ASSERT_TRUE(s.ok() || full) << s.error_message();
  }
  ASSERT_LT(filled, 200) << "the WAL never filled up";

  const auto started = std::chrono::steady_clock::now();
  auto client = Start(agent.address(), {"--retry-cap-ms", "1500", "send", "--topic", "full",
                                        "--max-attempts", "20", std::string(2000, 'v')});
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(err_path_).find("retry: RESOURCE_EXHAUSTED") != std::string::npos; },
                        30s))
      << ReadFile(err_path_);
  ASSERT_EQ(kafka.Command("broker up all"), "OK");
  Result r = Finish(*client);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.lines.size(), 1u) << r.err;
  auto f = Fields(r.lines[0]);
  EXPECT_EQ(f["state"], "DELIVERED") << r.lines[0];
  EXPECT_EQ(f["partition"], "0") << r.lines[0];
  EXPECT_TRUE(f.count("offset")) << r.lines[0];

  // Every retry waited the agent's hint, capped at 1500 ms.
  static const std::regex kRetry(
      R"(retry: RESOURCE_EXHAUSTED on attempt \d+/20: retry-after-ms=(\d+), waiting (\d+) ms)");
  int retries = 0;
  int64_t waited_ms = 0;
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), kRetry), end; it != end; ++it, ++retries) {
    const int64_t hint = std::stoll((*it)[1]), wait = std::stoll((*it)[2]);
    EXPECT_GT(hint, 0);
    EXPECT_EQ(wait, std::min<int64_t>(hint, 1500)) << it->str();
    waited_ms += wait;
  }
  EXPECT_GE(retries, 1) << r.err;
  EXPECT_GE(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), waited_ms)
      << "the client slept as long as it said";
}

// The feed follower survives an agent restart: it reconnects from the last sequence it
// saw plus one, and prints every outcome once, in order.
TEST_F(PythonClientTest, WatchReconnectsFromTheLastSequenceAfterAnAgentRestart) {
  DevKafka kafka(tmp_.path(), 1, {"feed:2"});
  const std::string wal = tmp_.sub("wal");
  auto agent = std::make_unique<AgentProcess>(wal, tmp_.sub("agent.log"), kafka.bootstrap());
  const std::string address = agent->address();
  auto send = [&](const std::string& value) {
    Result r = Run(address, {"send", "--topic", "feed", value});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.lines;
  };
  std::vector<std::string> sent;
  for (const char* v : {"one", "two", "three"}) {
    for (const std::string& line : send(v)) sent.push_back(line);
  }
  auto watch = Start(address, {"watch", "--from", "1", "--count", "6"});
  const std::string watch_err = err_path_;
  std::vector<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto line = watch->WaitForLine("", 30s);
    ASSERT_TRUE(line) << ReadFile(watch_err);
    seen.push_back(*line);
  }
  agent.reset();  // SIGKILL: the feed's connection breaks
  agent = std::make_unique<AgentProcess>(wal, tmp_.sub("agent2.log"), kafka.bootstrap(),
                                         std::vector<std::string>{"--listen", address});
  ASSERT_EQ(agent->address(), address);
  for (const char* v : {"four", "five", "six"}) {
    for (const std::string& line : send(v)) sent.push_back(line);
  }
  while (auto line = watch->WaitForLine("", 60s)) seen.push_back(*line);
  std::optional<int> status = watch->Wait(30s);
  ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << ReadFile(watch_err);
  EXPECT_EQ(seen, sent) << ReadFile(watch_err);
  EXPECT_NE(ReadFile(watch_err).find("reconnect: UNAVAILABLE"), std::string::npos) << ReadFile(watch_err);
  EXPECT_NE(ReadFile(watch_err).find("resuming from 4"), std::string::npos) << ReadFile(watch_err);
}

}  // namespace
}  // namespace kspool
