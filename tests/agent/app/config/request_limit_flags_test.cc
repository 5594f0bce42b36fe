// The request-limit flags of the Spool service: --max-headers and --max-future-timestamp.
// (Apart from tests/agent/app/config/config_test.cc so that the two can change independently.)
#include <gtest/gtest.h>

#include "agent/app/config/config.h"
#include "tests/agent/app/config/parse_args.h"

namespace kspool::agent {
namespace {

TEST(RequestLimitFlags, DefaultsAreSixtyFourHeadersAndOneHourAhead) {
  ParseOutcome p = ParseArgs({});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.limits.max_headers, 64u);
  EXPECT_EQ(p.config.limits.max_future_timestamp_ms, 3'600'000u);
}

TEST(RequestLimitFlags, TakeACountAndADuration) {
  ParseOutcome p = ParseArgs({"--max-headers", "8", "--max-future-timestamp", "5m"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.limits.max_headers, 8u);
  EXPECT_EQ(p.config.limits.max_future_timestamp_ms, 300'000u);
  p = ParseArgs({"--max-future-timestamp", "0"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.limits.max_future_timestamp_ms, 0u) << "0: no timestamp in the future";
}

TEST(RequestLimitFlags, BadValuesAreErrorsNamingTheFlag) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--max-headers", "0"}, {"--max-headers", "-1"},
        {"--max-future-timestamp", "-1h"}, {"--max-future-timestamp", "soon"},
        {"--max-future-timestamp", "99999999d"}}) {
    ParseOutcome p = ParseArgs(args);
    EXPECT_TRUE(p.exit) << args[0] << " " << args[1];
    EXPECT_NE(p.exit_code, 0);
    EXPECT_NE(p.output.find(args[0]), std::string::npos) << p.output;
  }
}

}  // namespace
}  // namespace kspool::agent
