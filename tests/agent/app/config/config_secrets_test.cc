// --kafka-option-file (secrets read from files, e.g. a Kubernetes secret) and
// --print-config (the effective configuration as a config file, secrets redacted).
#include <gtest/gtest.h>

#include <fstream>

#include "agent/app/config/config.h"
#include "tests/agent/app/config/parse_args.h"
#include "tests/support/temp_dir.h"

namespace kspool::agent {
namespace {

class ConfigSecrets : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.sub(name), std::ios::binary) << text;
    return dir_.sub(name);
  }
  kspool::testing::TempDir dir_;
};

TEST_F(ConfigSecrets, OptionFileValueIsTheContentWithoutOneTrailingNewline) {
  const std::string pw = Write("pw", "s3cret with spaces, commas\n\n");
  ParseOutcome p = ParseArgs(
      {"--kafka-option", "sasl.username=u", "--kafka-option-file", "sasl.password=" + pw});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(
      p.config.kafka_options,
      (std::vector<std::string>{"sasl.username=u", "sasl.password=s3cret with spaces, commas\n"}));
  EXPECT_EQ(p.config.kafka_option_files, std::vector<std::string>{"sasl.password=" + pw});
}

TEST_F(ConfigSecrets, OptionFilesComeFromTheEnvironmentOneALineAndFromTheConfigFile) {
  const std::string pw = Write("pw", "from-env"), key = Write("key", "key-pw\r\n");
  ParseOutcome env =
      ParseArgs({}, {"KSPOOL_KAFKA_OPTION_FILE=sasl.password=" + pw + "\nssl.key.password=" + key});
  ASSERT_FALSE(env.exit) << env.output;
  EXPECT_EQ(env.config.kafka_options,
            (std::vector<std::string>{"sasl.password=from-env", "ssl.key.password=key-pw"}));
  const std::string toml = Write("k.toml", "kafka-option-file = [\"sasl.password=" + pw + "\"]\n");
  ParseOutcome file = ParseArgs({"--config", toml});
  ASSERT_FALSE(file.exit) << file.output;
  EXPECT_EQ(file.config.kafka_options, std::vector<std::string>{"sasl.password=from-env"});
}

TEST_F(ConfigSecrets, UnreadableOrEmptyFileExitsTwoNamingFlagAndPath) {
  const std::string empty = Write("empty", "\n");
  for (const std::string& path : {dir_.sub("missing"), empty, dir_.path()}) {
    ParseOutcome p = ParseArgs({"--kafka-option-file", "sasl.password=" + path});
    EXPECT_TRUE(p.exit);
    EXPECT_EQ(p.exit_code, 2) << p.output;
    EXPECT_NE(p.output.find("--kafka-option-file sasl.password=" + path), std::string::npos)
        << p.output;
  }
  ParseOutcome bad = ParseArgs({"--kafka-option-file", "no-path"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("KEY=PATH"), std::string::npos) << bad.output;
}

TEST_F(ConfigSecrets, KeyGivenBothInlineAndByFileIsRefusedWithoutTheValue) {
  const std::string pw = Write("pw", "file-secret-value\n");
  ParseOutcome p = ParseArgs({"--kafka-option", "sasl.password=inline-secret-value",
                              "--kafka-option-file", "sasl.password=" + pw});
  EXPECT_EQ(p.exit_code, 2) << p.output;
  EXPECT_NE(p.output.find("given with --kafka-option"), std::string::npos) << p.output;
  EXPECT_EQ(p.output.find("secret-value"), std::string::npos) << p.output;
}

TEST_F(ConfigSecrets, FixedPropertyFromAFileIsRefusedToo) {
  ParseOutcome p = ParseArgs({"--kafka-option-file", "acks=" + Write("acks", "1\n")});
  EXPECT_EQ(p.exit_code, 2) << p.output;
  EXPECT_NE(p.output.find("acks must stay all"), std::string::npos) << p.output;
}

TEST_F(ConfigSecrets, PrintConfigRedactsSecretsAndKeepsFilePaths) {
  const std::string pw = Write("pw", "file-secret-value");
  ParseOutcome p = ParseArgs({"--print-config", "--kafka-option", "sasl.username=alice",
                              "--kafka-option-file", "sasl.password=" + pw},
                             {"KSPOOL_KAFKA_OPTION=ssl.key.password=env-secret-value"});
  ASSERT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 0) << p.output;
  EXPECT_EQ(p.output.find("secret-value"), std::string::npos) << p.output;
  // The flag beats the environment: the env's kafka option is not in effect.
  EXPECT_NE(p.output.find("kafka-option = [\"sasl.username=alice\"]\n"), std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("kafka-option-file = [\"sasl.password=" + pw + "\"]\n"),
            std::string::npos)
      << p.output;
  ParseOutcome env =
      ParseArgs({"--print-config"}, {"KSPOOL_KAFKA_OPTION=ssl.key.password=env-secret"});
  EXPECT_NE(env.output.find("kafka-option = [\"ssl.key.password=[redacted]\"]\n"),
            std::string::npos)
      << env.output;
}

TEST_F(ConfigSecrets, PrintConfigReflectsPrecedenceAndParsesBackToTheSameConfig) {
  const std::string toml = Write("in.toml",
                                 "wal-dir = \"/from/file\"\nlisten = \"127.0.0.1:1\"\n"
                                 "max-batch-messages = 7\nheartbeat-topics = [\"a\", \"b\"]\n");
  const std::string pw = Write("pw", "file-secret-value");
  ParseOutcome first =
      ParseArgs({"--print-config", "--config", toml, "--wal-dir", "/from/flag", "--kafka-option",
                 "debug=conf,msg", "--kafka-option", "client.id=it's \"quoted\"",
                 "--kafka-option-file", "sasl.password=" + pw, "--max-message-age", "7d"},
                {"KSPOOL_LISTEN=127.0.0.1:2", "KSPOOL_TOPIC_MAX_BYTES=10%"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("wal-dir = \"/from/flag\"\n"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("listen = \"127.0.0.1:2\"\n"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("max-batch-messages = \"7\"\n"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("max-message-bytes = \"999457\"\n"), std::string::npos)
      << first.output;  // a default

  const std::string printed = Write("printed.toml", first.output);
  ParseOutcome again = ParseArgs({"--config", printed});
  ASSERT_FALSE(again.exit) << again.output;
  ParseOutcome direct =
      ParseArgs({"--config", toml, "--wal-dir", "/from/flag", "--kafka-option", "debug=conf,msg",
                 "--kafka-option", "client.id=it's \"quoted\"", "--kafka-option-file",
                 "sasl.password=" + pw, "--max-message-age", "7d"},
                {"KSPOOL_LISTEN=127.0.0.1:2", "KSPOOL_TOPIC_MAX_BYTES=10%"});
  ASSERT_FALSE(direct.exit) << direct.output;
  const Config& a = again.config;
  const Config& d = direct.config;
  EXPECT_EQ(a.wal.dir, d.wal.dir);
  EXPECT_EQ(a.listen, d.listen);
  EXPECT_EQ(a.kafka_options, d.kafka_options);  // the file is read again
  EXPECT_EQ(a.kafka_option_files, d.kafka_option_files);
  EXPECT_EQ(a.heartbeat.topics, d.heartbeat.topics);
  EXPECT_EQ(a.limits.max_batch_messages, d.limits.max_batch_messages);
  EXPECT_EQ(a.drain.max_message_age_ms, d.drain.max_message_age_ms);
  EXPECT_EQ(a.topic_max_bytes.percent, d.topic_max_bytes.percent);
  EXPECT_EQ(a.limits.max_message_bytes, d.limits.max_message_bytes);
  EXPECT_EQ(a.dead_letter_max_bytes.percent, d.dead_letter_max_bytes.percent);
  EXPECT_EQ(a.idle_timeout_ms, d.idle_timeout_ms);
  EXPECT_EQ(a.bruce_socket.mode, d.bruce_socket.mode);
  // Printing the re-read configuration prints the same text.
  ParseOutcome twice = ParseArgs({"--print-config", "--config", printed});
  EXPECT_EQ(twice.output, first.output);
}

TEST_F(ConfigSecrets, PrintConfigOfAnInlineSecretParsesBackAsRedacted) {
  ParseOutcome first = ParseArgs({"--print-config", "--kafka-option", "sasl.password=inline-pw"});
  ParseOutcome again = ParseArgs({"--config", Write("p.toml", first.output)});
  ASSERT_FALSE(again.exit) << again.output;
  EXPECT_EQ(again.config.kafka_options, std::vector<std::string>{"sasl.password=[redacted]"});
}

}  // namespace
}  // namespace kspool::agent
