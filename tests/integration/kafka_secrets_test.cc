// A SASL password given to the agent appears in none of its outputs (docs/SECURITY.md,
// "Kafka security"): a real kspool-agent with librdkafka's debug output on, a real
// kspool-devkafka, the password from --kafka-option-file or from the environment. The
// agent runs, delivers or retries, refuses bad requests, discards for a Kafka error,
// answers /status, /metrics, /discards and kspoolctl, prints --print-config and shuts
// down; every byte of all of it is searched for the password.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ChildProcess;
using kspool::testing::RunCtl;
using namespace std::chrono_literals;

enum class Source { kFile, kEnvironment };
enum class Kafka { kSaslRetrying, kPlainDelivering };

std::string UniqueSecret() {
  std::random_device rd;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "kspool-pw-%08x%08x", rd(), rd());
  return buf;
}

class KafkaSecretLeak : public ::testing::TestWithParam<std::tuple<Source, Kafka>> {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<kspool::testing::DevKafka>(dir_.path(), 1,
                                                         std::vector<std::string>{"events:1"});
    std::ofstream(dir_.sub("password")) << secret_ << "\n";
    // The password, and settings that make librdkafka say as much as it can.
    std::vector<std::string> options = {"debug=all", "sasl.username=kspool-user",
                                        "topic.metadata.propagation.max.ms=300",
                                        "reconnect.backoff.max.ms=200"};
    if (std::get<1>(GetParam()) == Kafka::kSaslRetrying) {
      // librdkafka 2.0.2's mock cluster has no SASL handshake: the agent authenticates,
      // fails, and retries for as long as it runs.
      options.insert(options.end(),
                     {"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512"});
    }
    args_ = {"--log-level", "debug", "--unknown-topic-checks", "1", "--shutdown-grace-ms", "300"};
    if (std::get<0>(GetParam()) == Source::kFile) {
      for (const std::string& o : options) args_.insert(args_.end(), {"--kafka-option", o});
      args_.insert(args_.end(), {"--kafka-option-file", "sasl.password=" + dir_.sub("password")});
    } else {
      // All in the environment: a --kafka-option flag would replace the variable's list.
      std::string lines = "sasl.password=" + secret_;
      for (const std::string& o : options) lines += "\n" + o;
      env_ = {"KSPOOL_KAFKA_OPTION=" + lines};
    }
  }

  // Every line the process still writes to stdout, until it closes it.
  static std::string RestOfStdout(ChildProcess& p) {
    std::string out;
    while (auto line = p.WaitForLine("", 15s)) out += *line + "\n";
    return out;
  }

  void ExpectNoSecret(const std::string& what, const std::string& text) {
    EXPECT_EQ(text.find(secret_), std::string::npos) << what << " holds the password:\n" << text;
  }

  const std::string secret_ = UniqueSecret();
  kspool::testing::TempDir dir_;
  std::unique_ptr<kspool::testing::DevKafka> kafka_;
  std::vector<std::string> args_;
  std::vector<std::string> env_;
};

TEST_P(KafkaSecretLeak, PasswordAppearsInNoOutput) {
  // --print-config, the way an operator checks a deployment.
  {
    std::vector<std::string> argv = {KSPOOL_AGENT_BIN,    "--print-config", "--kafka-brokers",
                                     kafka_->bootstrap(), "--wal-dir",      dir_.sub("print-wal"),
                                     "--listen",          "127.0.0.1:0"};
    argv.insert(argv.end(), args_.begin(), args_.end());
    ChildProcess print(argv, dir_.sub("print.err"), env_);
    const std::string printed = RestOfStdout(print);
    ASSERT_EQ(print.Wait(10s), 0);
    EXPECT_NE(printed.find("sasl.password"), std::string::npos) << printed;
    ExpectNoSecret("--print-config", printed);
    EXPECT_FALSE(std::filesystem::exists(dir_.sub("print-wal"))) << "--print-config opened the WAL";
    ExpectNoSecret("--print-config stderr", kspool::testing::ReadWholeFile(dir_.sub("print.err")));
  }

  const bool sasl = std::get<1>(GetParam()) == Kafka::kSaslRetrying;
  AgentProcess agent(dir_.sub("wal"), dir_.sub("agent.log"), kafka_->bootstrap(), args_, env_);
  std::string outputs;  // every answer the agent gave, with where it came from
  auto keep = [&](const std::string& what, const std::string& text) {
    outputs += "== " + what + "\n" + text + "\n";
  };
  keep("ready line", agent.ready_line());

  // A Send accepted; one waiting for Kafka (its deadline passes while SASL fails, or it
  // is delivered); a request refused; messages to a topic Kafka says does not exist.
  kspool::v1::SendRequest good;
  good.add_messages()->set_topic("events");
  good.mutable_messages(0)->set_value("v");
  kspool::v1::SendResponse resp;
  grpc::Status s = agent.Send(good, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  good.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  s = agent.Send(good, &resp, sasl ? 700 : 10000);
  keep("WAIT_FOR_KAFKA", s.error_message() + " " + resp.DebugString());
  EXPECT_EQ(s.ok(), !sasl) << s.error_message();
  kspool::v1::SendRequest bad;
  bad.add_messages()->set_value("no topic");
  s = agent.Send(bad, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  keep("bad request", s.error_message() + " " + s.error_details());
  ASSERT_EQ(kafka_->Command("topic error ghost UNKNOWN_TOPIC_OR_PART"), "OK");
  kspool::v1::SendRequest ghost;
  ghost.add_messages()->set_topic("ghost");
  ghost.mutable_messages(0)->set_value("g");
  ghost.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
  s = agent.Send(ghost, &resp, sasl ? 700 : 20000);
  keep("ghost topic", s.error_message() + " " + resp.DebugString());
  if (!sasl) {
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.deliveries(0).discard_reason(), "unknown_topic") << resp.DebugString();
  }

  // The agent really used SASL (and failed), or really delivered.
  const std::string log_path = dir_.sub("agent.log");
  if (sasl) {
    EXPECT_TRUE(kspool::testing::WaitUntil(
        [&] {
          return kspool::testing::ReadWholeFile(log_path).find(
                     "Failed to initialize SASL authentication") != std::string::npos;
        },
        10s));
  }

  for (const char* path : {"/status", "/metrics", "/discards", "/healthz"}) {
    keep(path, kspool::testing::HttpGet(agent.http_address(), path).body);
  }
  for (std::vector<std::string> cmd : {std::vector<std::string>{"status"},
                                       {"--json", "stats"},
                                       {"report"},
                                       {"--json", "report"},
                                       {"commit-point"}}) {
    cmd.insert(cmd.begin(), {"--agent", agent.address()});
    kspool::testing::CtlResult r = RunCtl(cmd, dir_.path());
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    keep("kspoolctl " + cmd.back(), r.out + r.err);
  }

  agent.process().Signal(SIGTERM);
  keep("stdout after shutdown", RestOfStdout(agent.process()));
  EXPECT_EQ(agent.process().Wait(20s), 0);
  const std::string log = kspool::testing::ReadWholeFile(log_path);
  keep("agent log", log);
  // The log is librdkafka's debug output (so the search looked where a leak would be).
  EXPECT_NE(log.find("librdkafka CONF"), std::string::npos);
  EXPECT_NE(log.find("sasl.password = [redacted]"), std::string::npos);
  ExpectNoSecret("the agent's outputs", outputs);
}

INSTANTIATE_TEST_SUITE_P(
    FromFileOrEnvironment, KafkaSecretLeak,
    ::testing::Combine(::testing::Values(Source::kFile, Source::kEnvironment),
                       ::testing::Values(Kafka::kSaslRetrying, Kafka::kPlainDelivering)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == Source::kFile ? "File" : "Environment") +
             (std::get<1>(info.param) == Kafka::kSaslRetrying ? "SaslRetrying" : "PlainDelivering");
    });

// A secret option librdkafka refuses stops the agent (exit 2) with a message naming the
// option, not its value.
TEST(KafkaSecretRefused, BadSecretOptionExitsTwoWithoutItsValue) {
  kspool::testing::TempDir dir;
  const std::string secret = UniqueSecret();
  std::ofstream(dir.sub("jaas")) << "PlainLoginModule required password=\"" << secret << "\";\n";
  ChildProcess agent(
      {KSPOOL_AGENT_BIN, "--wal-dir", dir.sub("wal"), "--listen", "127.0.0.1:0", "--metrics-listen",
       "127.0.0.1:0", "--kafka-option-file", "sasl.jaas.config=" + dir.sub("jaas")},
      dir.sub("agent.err"));
  std::optional<int> st = agent.Wait(10s);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 2) << *st;
  const std::string err = kspool::testing::ReadWholeFile(dir.sub("agent.err"));
  EXPECT_NE(err.find("sasl.jaas.config"), std::string::npos) << err;
  EXPECT_EQ(err.find(secret), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir.sub("wal"))) << "the WAL was opened";
}

}  // namespace
}  // namespace kspool
