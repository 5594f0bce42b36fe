// --kafka-option: how values arrive from flags, the environment and the config file, and
// which options the drain's contract forbids (refused at start, naming the option).
#include <gtest/gtest.h>

#include <fstream>

#include "agent/app/config/config.h"
#include "tests/agent/app/config/parse_args.h"
#include "tests/support/temp_dir.h"

namespace kspool::agent {
namespace {

TEST(Config, KafkaOptionValueKeepsItsCommas) {
  ParseOutcome p = ParseArgs({"--kafka-option", "debug=conf,msg", "--kafka-option=linger.ms=10"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.kafka_options, (std::vector<std::string>{"debug=conf,msg", "linger.ms=10"}));
}

TEST(Config, KafkaOptionsFromTheEnvironmentAreOneALine) {
  ParseOutcome p = ParseArgs({}, {"KSPOOL_KAFKA_OPTION=debug=conf,msg\nlinger.ms=10\n"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.kafka_options, (std::vector<std::string>{"debug=conf,msg", "linger.ms=10"}));
}

TEST(Config, KafkaOptionsFromTheConfigFileAreAListOrOneString) {
  kspool::testing::TempDir dir;
  const std::string list = dir.sub("list.toml"), one = dir.sub("one.toml");
  std::ofstream(list) << "kafka-option = [\"debug=conf,msg\", \"linger.ms=10\"]\n";
  std::ofstream(one) << "kafka-option = \"debug=conf,msg\"\n";
  ParseOutcome p = ParseArgs({"--config", list});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.kafka_options, (std::vector<std::string>{"debug=conf,msg", "linger.ms=10"}));
  p = ParseArgs({"--config", one});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.kafka_options, (std::vector<std::string>{"debug=conf,msg"}));
}

TEST(Config, KafkaOptionWithoutAKeyOrEqualsIsAUsageError) {
  for (const std::string bad : {"linger.ms", "=5", ""}) {
    ParseOutcome p = ParseArgs({"--kafka-option", bad});
    EXPECT_TRUE(p.exit) << bad;
    EXPECT_EQ(p.exit_code, 2) << bad;
    EXPECT_NE(p.output.find("KEY=VALUE"), std::string::npos) << bad << ": " << p.output;
  }
}

TEST(Config, AcksAllOrMinusOneIsAcceptedUnderEitherName) {
  for (const std::string ok :
       {"acks=all", "acks=-1", "acks=ALL", "request.required.acks=all", "request.required.acks=-1",
        "enable.idempotence=true", "enable.idempotence=1"}) {
    ParseOutcome p = ParseArgs({"--kafka-option", ok});
    EXPECT_FALSE(p.exit) << ok << ": " << p.output;
  }
}

TEST(Config, AcksBelowAllOrIdempotenceOffIsAUsageErrorUnderEitherName) {
  for (const std::string bad : {"acks=0", "acks=1", "acks=2", "request.required.acks=0",
                                "request.required.acks=1", "enable.idempotence=false", "acks="}) {
    for (const ParseOutcome& p :
         {ParseArgs({"--kafka-option", bad}), ParseArgs({}, {"KSPOOL_KAFKA_OPTION=" + bad})}) {
      EXPECT_TRUE(p.exit) << bad;
      EXPECT_EQ(p.exit_code, 2) << bad;
      EXPECT_NE(p.output.find("--kafka-option"), std::string::npos) << bad << ": " << p.output;
      EXPECT_NE(p.output.find(bad + " is refused"), std::string::npos) << bad << ": " << p.output;
    }
  }
}

TEST(Config, KafkaOptionsTheDrainReliesOnAreAUsageErrorNamingTheOption) {
  for (const std::string bad :
       {"delivery.report.only.error=true", "delivery.report.only.error=1",
        "delivery.report.only.error=T", "transactional.id=kspool", "partitioner=consistent",
        "partitioner=random", "statistics.interval.ms=0"}) {
    for (const ParseOutcome& p :
         {ParseArgs({"--kafka-option", bad}), ParseArgs({}, {"KSPOOL_KAFKA_OPTION=" + bad})}) {
      EXPECT_TRUE(p.exit) << bad;
      EXPECT_EQ(p.exit_code, 2) << bad;
      EXPECT_NE(p.output.find(bad + " is refused"), std::string::npos) << bad << ": " << p.output;
    }
  }
  for (const std::string ok : {"delivery.report.only.error=false", "partitioner=murmur2",
                               "partitioner=murmur2_random", "statistics.interval.ms=5000"}) {
    ParseOutcome p = ParseArgs({"--kafka-option", ok});
    EXPECT_FALSE(p.exit) << ok << ": " << p.output;
  }
}

}  // namespace
}  // namespace kspool::agent
