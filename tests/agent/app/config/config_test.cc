#include "agent/app/config/config.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "agent/security/tls_credentials.h"
#include "tests/agent/app/config/parse_args.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace kspool::agent {
namespace {

TEST(Config, DefaultsWithoutAnything) {
  ParseOutcome p = ParseArgs({});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.dir, "/var/lib/kspool/wal");
  EXPECT_EQ(p.config.listen, "127.0.0.1:7411");
}

TEST(Config, FlagsBeatEnvironmentBeatFileBeatDefaults) {
  kspool::testing::TempDir dir;
  std::string file = dir.sub("kspool.toml");
  std::ofstream(file) << "wal-dir = \"/from/file\"\nlisten = \"127.0.0.1:1\"\n"
                         "kafka-brokers = \"file:9092\"\nmax-batch-messages = 7\n";
  ParseOutcome p = ParseArgs({"--config", file, "--wal-dir", "/from/flag"},
                             {"KSPOOL_WAL_DIR=/from/env", "KSPOOL_LISTEN=127.0.0.1:2"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.dir, "/from/flag");       // flag > env > file
  EXPECT_EQ(p.config.listen, "127.0.0.1:2");       // env > file
  EXPECT_EQ(p.config.kafka_brokers, "file:9092");  // file > default
  EXPECT_EQ(p.config.limits.max_batch_messages, 7u);
  EXPECT_EQ(p.config.limits.max_message_bytes, kDefaultMaxMessageBytes);  // default
}

TEST(Config, ConfigFileCanComeFromTheEnvironment) {
  kspool::testing::TempDir dir;
  std::string file = dir.sub("k.ini");
  std::ofstream(file) << "wal-dir=/ini/wal\n";
  ParseOutcome p = ParseArgs({}, {"KSPOOL_CONFIG=" + file});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.dir, "/ini/wal");
}

TEST(Config, KafkaOptionsRepeat) {
  ParseOutcome p = ParseArgs({"--kafka-option", "linger.ms=10", "--kafka-option=batch.size=1000"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.kafka_options, (std::vector<std::string>{"linger.ms=10", "batch.size=1000"}));
}

TEST(Config, UnknownFlagIsAnErrorNamingIt) {
  ParseOutcome p = ParseArgs({"--wal-dri", "/x"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.output.find("--wal-dri"), std::string::npos) << p.output;
}

TEST(Config, BadNumberIsAnErrorNamingTheFlag) {
  ParseOutcome p = ParseArgs({"--max-batch-messages", "many"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("max-batch-messages"), std::string::npos) << p.output;
}

TEST(Config, UnknownKspoolVariableIsAnErrorNamingIt) {
  ParseOutcome p = ParseArgs({}, {"KSPOOL_WALDIR=/x"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("KSPOOL_WALDIR"), std::string::npos) << p.output;
}

TEST(Config, MissingConfigFileIsAnError) {
  ParseOutcome p = ParseArgs({"--config", "/nonexistent/kspool.toml"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.output.find("/nonexistent/kspool.toml"), std::string::npos) << p.output;
}

TEST(Config, BoundsHaveSaneDefaults) {
  ParseOutcome p = ParseArgs({});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.max_queue_bytes, 64u << 20);
  EXPECT_EQ(p.config.topic_max_bytes.Of(1000), 0u) << "no per-topic limit unless asked";
  EXPECT_EQ(p.config.dead_letter_max_bytes.Of(1000), 100u) << "10% of the WAL";
  EXPECT_EQ(p.config.wal.max_dead_letter_age_ms, 7 * 86'400'000ll);
  EXPECT_EQ(p.config.wal.topic_idle_forget_ms, 86'400'000ll);
  EXPECT_EQ(p.config.wal.max_tracked_topics, 10000u);
}

TEST(Config, SizesTakeBytesUnitsOrAPercentOfTheWal) {
  ParseOutcome p = ParseArgs(
      {"--topic-max-bytes=10%", "--dead-letter-max-bytes", "2GiB", "--max-append-queue-bytes=3MiB"},
      {"KSPOOL_DEAD_LETTER_MAX_AGE=36h", "KSPOOL_TOPIC_IDLE_FORGET=0"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.topic_max_bytes.Of(1'000'000), 100'000u);
  EXPECT_EQ(p.config.topic_max_bytes.Of(0), 0u) << "a share of an unlimited WAL: no limit";
  EXPECT_EQ(p.config.dead_letter_max_bytes.Of(1'000'000), 2ull << 30);
  EXPECT_EQ(p.config.wal.max_queue_bytes, 3u << 20);
  EXPECT_EQ(p.config.wal.max_dead_letter_age_ms, 36 * 3'600'000ll);
  EXPECT_EQ(p.config.wal.topic_idle_forget_ms, 0);

  absl::StatusOr<ByteSize> half = ParseByteSize("2.5%");
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->Of(1000), 25u);
  EXPECT_EQ(ParseByteSize("512MiB")->bytes, 512u << 20);
  EXPECT_EQ(ParseByteSize("7")->bytes, 7u);
}

TEST(Config, BadSizesAreErrorsNamingTheFlag) {
  for (const std::string bad : {"lots", "10 MiB", "5PiB", "150%", "1.2.3%", "%"}) {
    ParseOutcome p = ParseArgs({"--topic-max-bytes", bad});
    EXPECT_TRUE(p.exit) << bad;
    EXPECT_NE(p.exit_code, 0) << bad;
    EXPECT_NE(p.output.find("topic-max-bytes"), std::string::npos) << bad << ": " << p.output;
  }
}

TEST(Config, GroupCommitDelayIsOffByDefaultAndAtMostATenthOfASecond) {
  EXPECT_EQ(ParseArgs({}).config.wal.group_commit_delay_us, 0u);
  ParseOutcome p = ParseArgs({"--group-commit-delay-us", "500"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.group_commit_delay_us, 500u);
  p = ParseArgs({"--group-commit-delay-us", "100001"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("group-commit-delay-us"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("100000"), std::string::npos) << p.output;
}

TEST(Config, SizesAndDurationsThatOverflowAreRejected) {
  ParseOutcome p = ParseArgs({"--dead-letter-max-bytes=20000000000TiB"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("dead-letter-max-bytes"), std::string::npos) << p.output;
  p = ParseArgs({"--max-append-queue-bytes=99999999999999999999999"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("max-append-queue-bytes"), std::string::npos) << p.output;
  p = ParseArgs({"--max-append-queue-bytes=10%"});
  EXPECT_TRUE(p.exit) << "the queue's bound is not a share of the WAL";
  EXPECT_NE(p.output.find("max-append-queue-bytes"), std::string::npos) << p.output;
  p = ParseArgs({"--max-tracked-topics=99999999999999999999999"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("max-tracked-topics"), std::string::npos) << p.output;
  p = ParseArgs({"--dead-letter-max-age=999999999999d"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("dead-letter-max-age"), std::string::npos) << p.output;
  EXPECT_FALSE(ParseDurationMs("999999999999d").ok()) << "does not fit signed 64-bit ms";
}

TEST(Config, HelpExitsZeroAndListsFlags) {
  ParseOutcome p = ParseArgs({"--help"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_NE(p.output.find("--kafka-brokers"), std::string::npos);
}

TEST(Config, VersionExitsZeroAndPrintsTheBuildVersion) {
  ParseOutcome p = ParseArgs({"--version"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_EQ(p.output, std::string("kspool-agent ") + KSPOOL_VERSION + "\n");
}

TEST(Config, DurationsTooLargeOrNegativeAreErrorsNamingTheFlag) {
  for (const std::string flag : {"--max-message-age", "--heartbeat-interval"}) {
    for (const std::string bad : {"999999999999d", "99999999999999999999", "-5s", "-1", "106752d",
                                  "9223372036854775807ms"}) {
      ParseOutcome p = ParseArgs({flag, bad});
      EXPECT_TRUE(p.exit) << flag << " " << bad;
      EXPECT_NE(p.exit_code, 0) << flag << " " << bad;
      EXPECT_NE(p.output.find(flag), std::string::npos) << p.output;
      EXPECT_NE(p.output.find(bad), std::string::npos) << p.output;
    }
  }
}

TEST(Config, LargestDurationIsAHundredYears) {
  EXPECT_EQ(*ParseDurationMs("36500d"), 36500ull * 86'400'000);
  EXPECT_FALSE(ParseDurationMs("36501d").ok());
  EXPECT_FALSE(ParseDurationMs("3153600000001ms").ok());
  EXPECT_NE(ParseDurationMs("999999999999d").status().message().find("36500d"), std::string::npos)
      << ParseDurationMs("999999999999d").status();
  ParseOutcome p = ParseArgs({"--max-message-age", "36500d", "--heartbeat-interval", "10s"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.drain.max_message_age_ms, 36500ull * 86'400'000);
  EXPECT_EQ(p.config.heartbeat.interval_ms, 10'000u);
}

// Millisecond flags are added to int64 times: a value that would overflow is refused.
TEST(Config, MillisecondFlagsBeyondAHundredYearsOrNegativeAreErrorsNamingTheFlag) {
  for (const std::string flag :
       {"--retry-backoff-ms", "--retry-backoff-max-ms", "--commit-point-interval-ms",
        "--wal-reopen-interval-ms", "--shutdown-grace-ms"}) {
    for (const std::string bad : {"18446744073709551615", "9223372036854775808", "3153600000001",
                                  "99999999999999999999", "-1"}) {
      ParseOutcome p = ParseArgs({flag, bad});
      EXPECT_TRUE(p.exit) << flag << " " << bad;
      EXPECT_NE(p.exit_code, 0) << flag << " " << bad;
      EXPECT_NE(p.output.find(flag), std::string::npos) << flag << " " << bad << ": " << p.output;
    }
    ParseOutcome ok = ParseArgs({flag, "3153600000000"});
    EXPECT_FALSE(ok.exit) << flag << ": " << ok.output;
  }
}

// Byte and count flags are compared with int64 sizes: at most INT64_MAX.
TEST(Config, SizeFlagsBeyondInt64OrNegativeAreErrorsNamingTheFlag) {
  for (const std::string flag :
       {"--wal-max-bytes", "--max-inflight-bytes", "--max-message-bytes", "--max-inflight-messages",
        "--max-batch-messages", "--unknown-topic-checks"}) {
    for (const std::string bad :
         {"18446744073709551615", "9223372036854775808", "99999999999999999999", "-1"}) {
      ParseOutcome p = ParseArgs({flag, bad});
      EXPECT_TRUE(p.exit) << flag << " " << bad;
      EXPECT_NE(p.exit_code, 0) << flag << " " << bad;
      EXPECT_NE(p.output.find(flag), std::string::npos) << flag << " " << bad << ": " << p.output;
    }
  }
  ParseOutcome ok = ParseArgs({"--wal-max-bytes", "9223372036854775807"});
  EXPECT_FALSE(ok.exit) << ok.output;
}

TEST(Config, OverflowingValuesFromTheEnvironmentAreErrorsNamingTheFlag) {
  ParseOutcome p = ParseArgs({}, {"KSPOOL_RETRY_BACKOFF_MS=18446744073709551615"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("retry-backoff-ms"), std::string::npos) << p.output;
  p = ParseArgs({}, {"KSPOOL_MAX_MESSAGE_AGE=999999999999d"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.output.find("max-message-age"), std::string::npos) << p.output;
}

// Kafka counts the record batch (61 bytes), librdkafka's worst-case record framing (36),
// the agent's own headers (62) and 6 bytes of length varints for each of 64 client
// headers; the default leaves room for all of it within librdkafka's default limit.
TEST(Config, DefaultMaxMessageBytesLeavesRoomForKafkasOverheadWithinAMillionBytes) {
  ParseOutcome p = ParseArgs({});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.limits.max_message_bytes, 999'457u);
  EXPECT_EQ(p.config.limits.max_message_bytes + 61 + 36 + 62 + 64 * 6, 1'000'000u);
}

TEST(Config, MaxMessageBytesBeyondWhatLibrdkafkaCanCarryIsAnErrorNamingTheFlag) {
  for (const std::string bad : {"999999458", "1000000000", "1073741824", "9223372036854775807",
                                "99999999999999999999", "0"}) {
    ParseOutcome p = ParseArgs({"--max-message-bytes", bad});
    EXPECT_TRUE(p.exit) << bad;
    EXPECT_EQ(p.exit_code, 2) << bad;
    EXPECT_NE(p.output.find("--max-message-bytes"), std::string::npos) << bad << ": " << p.output;
  }
  ParseOutcome ok = ParseArgs({"--max-message-bytes", "999999457", "--max-receive-memory", "4GiB",
                               "--max-append-queue-bytes", "1GiB"});
  ASSERT_FALSE(ok.exit) << ok.output;
  EXPECT_EQ(ok.config.limits.max_message_bytes, 999'999'457u);
}

// A quarter of --max-receive-memory is the most one request may take: the largest
// message must fit in it, or it could never be sent.
TEST(Config, ReceiveMemoryTooSmallForTheLargestMessageIsAnErrorNamingBoth) {
  ParseOutcome p = ParseArgs({"--max-message-bytes", "9000000", "--max-receive-memory", "32MiB"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(
      p.output.find("--max-receive-memory 33554432 is too small for --max-message-bytes 9000000"),
      std::string::npos)
      << p.output;
  EXPECT_FALSE(ParseArgs({"--max-message-bytes", "9000000", "--max-receive-memory", "64MiB"}).exit);
}

// A request larger than the append queue's bound is refused even by an empty queue:
// a bound below one largest message (or one Bruce batch) would refuse it forever.
TEST(Config, AppendQueueTooSmallForTheLargestMessageIsAnErrorNamingBoth) {
  ParseOutcome p = ParseArgs({"--max-append-queue-bytes", "1MiB"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--max-append-queue-bytes 1048576 is too small: a message of "
                          "--max-message-bytes 999457"),
            std::string::npos)
      << p.output;
  EXPECT_FALSE(ParseArgs({"--max-append-queue-bytes", "3MiB"}).exit);
  EXPECT_FALSE(ParseArgs({"--max-append-queue-bytes", "0"}).exit) << "0: no bound";
  EXPECT_TRUE(
      ParseArgs({"--max-append-queue-bytes", "3MiB", "--max-message-bytes", "4000000"}).exit);
}

TEST(Config, FrontDoorFlagsRefuseValuesOutsideTheirRange) {
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--max-connections", "0"},
                                             {"--max-streams-per-connection", "0"},
                                             {"--max-streams-per-connection", "2147483648"},
                                             {"--idle-timeout", "500ms"},
                                             {"--idle-timeout", "30d"},
                                             {"--max-receive-memory", "1MiB"},
                                             {"--max-receive-memory", "50%"}}) {
    ParseOutcome p = ParseArgs(bad);
    EXPECT_TRUE(p.exit) << bad[0] << " " << bad[1];
    EXPECT_EQ(p.exit_code, 2) << bad[0] << " " << bad[1];
    EXPECT_NE(p.output.find(bad[0]), std::string::npos) << p.output;
  }
  ParseOutcome ok = ParseArgs({"--max-connections", "5", "--max-streams-per-connection", "7",
                               "--idle-timeout", "90s", "--max-receive-memory", "1GiB"});
  ASSERT_FALSE(ok.exit) << ok.output;
  EXPECT_EQ(ok.config.max_connections, 5u);
  EXPECT_EQ(ok.config.max_streams_per_connection, 7u);
  EXPECT_EQ(ok.config.idle_timeout_ms, 90'000u);
  EXPECT_EQ(ok.config.max_receive_memory, 1ull << 30);
}

// Every numeric flag, whichever way it comes: a value beyond its range never parses
// (it would wrap, or remove the limit) and the error names the flag.
TEST(Config, OutOfRangeNumbersAreUsageErrorsFromFlagsEnvironmentAndFile) {
  const std::vector<std::string> flags = {
      "max-message-bytes",        "max-batch-messages",     "max-inflight-messages",
      "max-inflight-bytes",       "retry-backoff-ms",       "retry-backoff-max-ms",
      "commit-point-interval-ms", "wal-max-bytes",          "unknown-topic-checks",
      "wal-reopen-interval-ms",   "max-tracked-topics",     "shutdown-grace-ms",
      "max-message-age",          "heartbeat-interval",     "dead-letter-max-age",
      "topic-idle-forget",        "max-append-queue-bytes", "topic-max-bytes",
      "dead-letter-max-bytes",    "group-commit-delay-us"};
  kspool::testing::TempDir dir;
  for (const std::string& flag : flags) {
    for (const std::string bad :
         {"99999999999999999999", "-1", "18446744073709551616", "1e30", "0x10", " 5", "5 ", "+5"}) {
      std::string env = "KSPOOL_";
      for (char ch : flag) env.push_back(ch == '-' ? '_' : static_cast<char>(std::toupper(ch)));
      const std::string file = dir.sub(flag + ".toml");
      std::ofstream(file) << flag << " = \"" << bad << "\"\n";
      for (const ParseOutcome& p : {ParseArgs({"--" + flag, bad}), ParseArgs({}, {env + "=" + bad}),
                                    ParseArgs({"--config", file})}) {
        EXPECT_TRUE(p.exit) << flag << " '" << bad << "'";
        EXPECT_EQ(p.exit_code, 2) << flag << " '" << bad << "'";
        EXPECT_NE(p.output.find(flag), std::string::npos)
            << flag << " '" << bad << "': " << p.output;
      }
    }
  }
}

TEST(Config, EmptyWalDirIsAUsageErrorFromFlagEnvironmentOrFile) {
  kspool::testing::TempDir dir;
  const std::string file = dir.sub("k.toml");
  std::ofstream(file) << "wal-dir = \"\"\n";
  for (const ParseOutcome& p :
       {ParseArgs({"--wal-dir", ""}), ParseArgs({"--wal-dir="}), ParseArgs({}, {"KSPOOL_WAL_DIR="}),
        ParseArgs({"--config", file})}) {
    EXPECT_TRUE(p.exit);
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.output.find("--wal-dir"), std::string::npos) << p.output;
  }
  EXPECT_NE(ParseArgs({"--wal-dir", ""}).output.find("must not be empty"), std::string::npos);
}

}  // namespace
}  // namespace kspool::agent

namespace kspool::agent {
namespace {

class TlsFlags : public ::testing::Test {
 protected:
  kspool::testing::TempDir dir_;
  kspool::testing::TestPki pki_{dir_.sub("pki"), "a"};
  kspool::testing::CertAndKey server_ = pki_.IssueLocalServer("server");
  kspool::testing::CertAndKey other_ = pki_.IssueLocalServer("other");
};

TEST_F(TlsFlags, CertificateKeyAndClientCaAreTaken) {
  ParseOutcome p = ParseArgs(
      {"--tls-cert", server_.cert, "--tls-key", server_.key, "--tls-client-ca", pki_.ca_cert()});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.tls_cert, server_.cert);
  EXPECT_EQ(p.config.tls_client_ca, pki_.ca_cert());
}

TEST_F(TlsFlags, CertificateWithoutKeyExitsTwoNamingTheFlag) {
  ParseOutcome p = ParseArgs({"--tls-cert", server_.cert});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--tls-cert needs --tls-key"), std::string::npos) << p.output;
}

TEST_F(TlsFlags, ClientCaWithoutCertificateExitsTwo) {
  ParseOutcome p = ParseArgs({}, {"KSPOOL_TLS_CLIENT_CA=" + pki_.ca_cert()});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--tls-client-ca needs --tls-cert"), std::string::npos) << p.output;
}

TEST_F(TlsFlags, UnreadableFileExitsTwoNamingTheFlag) {
  ParseOutcome p = ParseArgs({"--tls-cert", server_.cert, "--tls-key", dir_.sub("missing.key")});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--tls-key " + dir_.sub("missing.key") + ": cannot be read"),
            std::string::npos)
      << p.output;
}

TEST_F(TlsFlags, KeyOfAnotherCertificateExitsTwo) {
  ParseOutcome p = ParseArgs({"--tls-cert", server_.cert, "--tls-key", other_.key});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("does not match the certificate"), std::string::npos) << p.output;
}

TEST_F(TlsFlags, ClientCaThatIsNoCertificateExitsTwo) {
  ParseOutcome p = ParseArgs(
      {"--tls-cert", server_.cert, "--tls-key", server_.key, "--tls-client-ca", server_.key});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--tls-client-ca " + server_.key + ": holds no PEM certificate"),
            std::string::npos)
      << p.output;
}

TEST(TlsLoopback, OnlyLoopbackAndUnixAddressesCountAsLocal) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:7411"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:7411"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:7411"));
  EXPECT_TRUE(IsLoopbackAddress("unix:/run/kspool.sock"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:7411"));
  EXPECT_FALSE(IsLoopbackAddress(":7411"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:7411"));
  EXPECT_FALSE(IsLoopbackAddress("10.1.2.3:7411"));
}

}  // namespace
}  // namespace kspool::agent

namespace kspool::agent {
namespace {

TEST(MetricsTlsFlags, CertificateWithoutKeyExitsTwoNamingTheFlag) {
  kspool::testing::TempDir dir;
  kspool::testing::TestPki pki(dir.sub("pki"), "a");
  ParseOutcome p = ParseArgs({"--metrics-tls-cert", pki.IssueLocalServer("s").cert});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--metrics-tls-cert needs --metrics-tls-key"), std::string::npos)
      << p.output;
}

TEST(MetricsTlsFlags, KeyOfAnotherCertificateExitsTwoNamingTheMetricsFlag) {
  kspool::testing::TempDir dir;
  kspool::testing::TestPki pki(dir.sub("pki"), "a");
  ParseOutcome p = ParseArgs({"--metrics-tls-cert", pki.IssueLocalServer("s").cert,
                              "--metrics-tls-key", pki.IssueLocalServer("t").key});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--metrics-tls-key"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("does not match the certificate of --metrics-tls-cert"),
            std::string::npos)
      << p.output;
}

TEST(Config, BruceInputIsOffByDefault) {
  ParseOutcome p = ParseArgs({});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_FALSE(p.config.bruce_enabled());
  EXPECT_EQ(p.config.bruce_max_message_bytes, 0u);  // per-transport defaults
  EXPECT_EQ(p.config.bruce_socket.mode, 0660u);
}

TEST(Config, BruceFlagsAndTheirEnvironmentVariables) {
  ParseOutcome p =
      ParseArgs({"--bruce-datagram-socket", "/run/k/d.sock", "--bruce-socket-mode", "640",
                 "--bruce-max-message-bytes", "4096"},
                {"KSPOOL_BRUCE_TCP=127.0.0.1:9090", "KSPOOL_BRUCE_SOCKET_GROUP=kspool"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_TRUE(p.config.bruce_enabled());
  EXPECT_EQ(p.config.bruce_datagram_socket, "/run/k/d.sock");
  EXPECT_EQ(p.config.bruce_tcp, "127.0.0.1:9090");
  EXPECT_EQ(p.config.bruce_socket.group, "kspool");
  EXPECT_EQ(p.config.bruce_socket.mode, 0640u);
  EXPECT_EQ(p.config.bruce_max_message_bytes, 4096u);
}

TEST(Config, BruceSocketModeMustBeOctal) {
  for (const char* bad : {"0698", "rw-rw----", "", "12345"}) {
    ParseOutcome p = ParseArgs({"--bruce-socket-mode", bad});
    EXPECT_TRUE(p.exit) << bad;
    EXPECT_EQ(p.exit_code, 2) << bad;
    EXPECT_NE(p.output.find("--bruce-socket-mode"), std::string::npos) << p.output;
  }
}

TEST(Config, ListenSocketModeAndGroup) {
  EXPECT_EQ(ParseArgs({}).config.listen_socket.mode, 0660u);
  const struct group* own = getgrgid(getegid());
  ASSERT_NE(own, nullptr);
  ParseOutcome p =
      ParseArgs({"--listen-mode", "0600"}, {"KSPOOL_LISTEN_GROUP=" + std::string(own->gr_name)});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.listen_socket.mode, 0600u);
  EXPECT_EQ(p.config.listen_socket.group, own->gr_name);
  EXPECT_FALSE(ParseArgs({"--listen-group", ""}).exit) << "empty: the agent's group";
}

TEST(Config, BadListenModeOrUnknownListenGroupIsAUsageError) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"--listen-mode", "0869"}, {"--listen-group", "no-such-group-kspool-test"}}) {
    ParseOutcome p = ParseArgs(args);
    EXPECT_TRUE(p.exit) << args[0];
    EXPECT_EQ(p.exit_code, 2) << args[0];
    EXPECT_NE(p.output.find(args[0]), std::string::npos) << p.output;
  }
}

TEST(Config, AWorldWritableWalDirIsAUsageErrorNamingItsMode) {
  kspool::testing::TempDir tmp;
  ASSERT_EQ(chmod(tmp.path().c_str(), 0777), 0);
  ParseOutcome p = ParseArgs({"--wal-dir", tmp.path()});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("--wal-dir"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find(tmp.path() + " is world-writable (mode 0777)"), std::string::npos)
      << p.output;
  EXPECT_FALSE(ParseArgs({"--wal-dir", tmp.sub("not-yet")}).exit);  // created 0700 at start
}

TEST(AclFlag, ReadableRulesAreTakenAlsoFromTheEnvironment) {
  kspool::testing::TempDir dir;
  std::ofstream(dir.sub("acl.toml")) << "[[allow]]\nidentity = \"*\"\nsend = [\"*\"]\n";
  ParseOutcome p = ParseArgs({}, {"KSPOOL_ACL=" + dir.sub("acl.toml")});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.acl_file, dir.sub("acl.toml"));
  EXPECT_TRUE(ParseArgs({}).config.acl_file.empty()) << "off by default";
}

TEST(AclFlag, InvalidOrMissingFileExitsTwoNamingTheFlagTheFileAndTheProblem) {
  kspool::testing::TempDir dir;
  const std::string acl = dir.sub("acl.toml");
  ParseOutcome missing = ParseArgs({"--acl", acl});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.output, "--acl " + acl + ": cannot be read\n");
  std::ofstream(acl) << "[[allow]]\nidentity = \"cn:a\"\nadmin = 1\n";
  ParseOutcome bad = ParseArgs({"--acl", acl});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output,
            "--acl " + acl + ": rule 1 (line 3): admin: true or false, not an integer\n");
}

}  // namespace
}  // namespace kspool::agent
