#include "agent/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace kspool::agent {
namespace {

ParseOutcome Parse(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), "kspool-agent");
  std::vector<const char*> argv, envp;
  for (auto& a : args) argv.push_back(a.c_str());
  for (auto& e : env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  return ParseConfig(static_cast<int>(argv.size()), argv.data(), envp.data());
}

TEST(Config, DefaultsWithoutAnything) {
  ParseOutcome p = Parse({});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal_dir, "/var/lib/kspool/wal");
  EXPECT_EQ(p.config.listen, "127.0.0.1:7411");
}

TEST(Config, FlagsBeatEnvironmentBeatFileBeatDefaults) {
  kspool::testing::TempDir dir;
  std::string file = dir.sub("kspool.toml");
  std::ofstream(file) << "wal-dir = \"/from/file\"\nlisten = \"127.0.0.1:1\"\n"
                         "kafka-brokers = \"file:9092\"\nmax-batch-messages = 7\n";
  ParseOutcome p = Parse({"--config", file, "--wal-dir", "/from/flag"},
                         {"KSPOOL_WAL_DIR=/from/env", "KSPOOL_LISTEN=127.0.0.1:2"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal_dir, "/from/flag");       // flag > env > file
  EXPECT_EQ(p.config.listen, "127.0.0.1:2");       // env > file
  EXPECT_EQ(p.config.kafka_brokers, "file:9092");  // file > default
  EXPECT_EQ(p.config.max_batch_messages, 7u);
  EXPECT_EQ(p.config.max_message_bytes, 1u << 20);  // default
}

TEST(Config, ConfigFileCanComeFromTheEnvironment) {
  kspool::testing::TempDir dir;
  std::string file = dir.sub("k.ini");
  std::ofstream(file) << "wal-dir=/ini/wal\n";
  ParseOutcome p = Parse({}, {"KSPOOL_CONFIG=" + file});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal_dir, "/ini/wal");
}

TEST(Config, KafkaOptionsRepeat) {
  ParseOutcome p = Parse({"--kafka-option", "linger.ms=10", "--kafka-option=batch.size=1000"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.kafka_options,
            (std::vector<std::string>{"linger.ms=10", "batch.size=1000"}));
}

TEST(Config, UnknownFlagIsAnErrorNamingIt) {
  ParseOutcome p = Parse({"--wal-dri", "/x"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.output.find("--wal-dri"), std::string::npos) << p.output;
}

TEST(Config, BadNumberIsAnErrorNamingTheFlag) {
  ParseOutcome p = Parse({"--max-batch-messages", "many"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.output.find("max-batch-messages"), std::string::npos) << p.output;
}

TEST(Config, UnknownKspoolVariableIsAnErrorNamingIt) {
  ParseOutcome p = Parse({}, {"KSPOOL_WALDIR=/x"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.output.find("KSPOOL_WALDIR"), std::string::npos) << p.output;
}

TEST(Config, MissingConfigFileIsAnError) {
  ParseOutcome p = Parse({"--config", "/nonexistent/kspool.toml"});
  EXPECT_TRUE(p.exit);
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE(p.output.find("/nonexistent/kspool.toml"), std::string::npos) << p.output;
}

TEST(Config, HelpExitsZeroAndListsFlags) {
  ParseOutcome p = Parse({"--help"});
  EXPECT_TRUE(p.exit);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_NE(p.output.find("--kafka-brokers"), std::string::npos);
}

}  // namespace
}  // namespace kspool::agent
