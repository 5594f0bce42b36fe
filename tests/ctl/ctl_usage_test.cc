// kspoolctl refuses clearly: paths that are not a kspool WAL (and it creates nothing
// there), and bad command lines (exit code 2). No agent involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "rocksdb/db.h"
#include "tests/ctl/ctl_runner.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::CtlResult;
using kspool::testing::RunCtl;

class CtlUsageTest : public ::testing::Test {
 protected:
  CtlResult Ctl(const std::vector<std::string>& args) { return RunCtl(args, tmp_.path()); }
  kspool::testing::TempDir tmp_;
};

TEST_F(CtlUsageTest, RefusesPathsThatAreNotAKspoolWal) {
  const std::string missing = tmp_.sub("missing");
  for (std::vector<std::string> args : {std::vector<std::string>{"wal", "stats", missing},
                                        {"dead", "replay", missing, "--all"},
                                        {"dead", "purge", missing, "--all", "--yes"}}) {
    CtlResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, 1) << args[1];
    EXPECT_NE(r.err.find("WAL directory " + missing + " does not exist"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(missing)) << "nothing is created";
  }

  const std::string empty = tmp_.sub("empty");
  std::filesystem::create_directory(empty);
  CtlResult r = Ctl({"wal", "list", empty});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "kspoolctl: " + empty + " is not a kspool WAL: no RocksDB database in it (no CURRENT file)\n");
  r = Ctl({"dead", "purge", empty, "--all", "--yes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(std::filesystem::is_empty(empty));

  const std::string plain = tmp_.sub("plain");
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db;
    ASSERT_TRUE(rocksdb::DB::Open(o, plain, &db).ok());
    delete db;
  }
  r = Ctl({"wal", "verify", plain});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "kspoolctl: " + plain + " is not a kspool WAL: its RocksDB database has no column family 'log'\n");
}

TEST_F(CtlUsageTest, BadCommandLinesExitWithTwo) {
  CtlResult help = Ctl({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Exit codes: 0 success; 1 runtime error"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("4 the WAL is in use by a running agent"), std::string::npos);

  const std::string dir = tmp_.path();
  for (std::vector<std::string> args : {std::vector<std::string>{},
                                        {"wal"},
                                        {"wal", "show", dir},
                                        {"wal", "show", dir, "not-a-number"},
                                        {"wal", "show", dir, "1", "--value-format", "octal"},
                                        {"wal", "frobnicate", dir},
                                        {"dead", "replay", dir},
                                        {"dead", "purge", dir},
                                        {"send", "--topic", "t", "--header", "novalue", "v"},
                                        {"send", "--topic", "t", "--wait", "disk", "v"},
                                        {"delivery"},
                                        {"watch"},
                                        {"watch", "--from", "1", "--count", "0"}}) {
    CtlResult r = Ctl(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
  }
  CtlResult r = Ctl({"dead", "replay", dir});
  EXPECT_NE(r.err.find("choose the dead letters to replay with --seq, --topic, --reason, or --all"),
            std::string::npos) << r.err;
}

// Every numeric argument: a negative, hexadecimal, exponent or too large number is a
// usage error naming the argument, before any WAL or agent is touched (CLI11 alone
// wrapped "-5" to sequence number 18446744073709551611).
TEST_F(CtlUsageTest, NegativeOrNonDecimalNumbersAreUsageErrorsNamingTheArgument) {
  const std::string dir = tmp_.sub("missing");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"SEQ", {"wal", "show", dir, "@"}},
      {"SEQ", {"dead", "show", dir, "@"}},
      {"--from", {"wal", "list", dir, "--from", "@"}},
      {"--limit", {"wal", "list", dir, "--limit", "@"}},
      {"--from", {"wal", "dump", dir, "--from", "@"}},
      {"--limit", {"wal", "dump", dir, "--limit", "@"}},
      {"--from", {"dead", "list", dir, "--from", "@"}},
      {"--limit", {"dead", "list", dir, "--limit", "@"}},
      {"--seq", {"dead", "list", dir, "--seq", "1,@"}},
      {"--seq", {"dead", "replay", dir, "--seq", "@"}},
      {"--seq", {"dead", "purge", dir, "--seq", "@", "--yes"}},
      {"--timeout-ms", {"status", "--agent", "127.0.0.1:1", "--timeout-ms", "@"}},
      {"--partition", {"send", "--agent", "127.0.0.1:1", "--topic", "t", "--partition", "@", "v"}},
      {"SEQ", {"delivery", "--agent", "127.0.0.1:1", "7", "@"}},
      {"--from", {"watch", "--agent", "127.0.0.1:1", "--from", "@"}},
      {"--count", {"watch", "--agent", "127.0.0.1:1", "--from", "1", "--count", "@"}}};
  // Each argument with one bad form, and each form with one argument (the arguments
  // share one checked parser; a process start costs about 150 ms, so not all 112 pairs).
  const std::vector<std::string> forms = {"-5", "-1", "0x10", "1e3", "18446744073709551616",
                                          "+3", " 7"};
  for (size_t i = 0; i < std::max(forms.size(), cases.size()); ++i) {
    const std::string& bad = forms[i % forms.size()];
    auto [name, args] = cases[i % cases.size()];
    std::string joined;
    for (std::string& a : args) {
      if (a == "@") a = bad;
      if (a == "1,@") a = "1," + bad;
      joined += a + " ";
    }
    CtlResult r = Ctl(args);
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_NE(r.err.find(name + ": '" + bad + "' is not "), std::string::npos) << joined << "\n"
                                                                               << r.err;
  }
  for (const std::string bad : {"0", "2147483648"}) {
    CtlResult r = Ctl({"status", "--agent", "127.0.0.1:1", "--timeout-ms", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing is created";
}

// `delivery` takes sequence numbers and ranges A..B; a bad one is named, and a request
// beyond the API's 10,000 sequence numbers is refused before the agent is asked (the
// agent at 127.0.0.1:1 does not exist: a usage error must come first, exit 2, not 1).
TEST_F(CtlUsageTest, DeliveryRangesMustBeOrderedAndBounded) {
  for (const std::string bad : {"5..3", "1..", "..4", "1...4", "1..-4", "a..b", "1..10001", "1..2..3"}) {
    CtlResult r = Ctl({"delivery", "--agent", "127.0.0.1:1", "2", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("SEQ: '" + bad + "' is not a sequence number"), std::string::npos)
        << bad << ": " << r.err;
  }
  CtlResult r = Ctl({"delivery", "--agent", "127.0.0.1:1", "1..5000", "20001..25001"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "kspoolctl: SEQ: at most 10000 sequence numbers in one call\n");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"1..10000"},
                                              {"0..4999", "5000..9999"},
                                              {"3", "3..3", "18446744073709551615"}}) {
    std::vector<std::string> full = {"delivery", "--agent", "127.0.0.1:1", "--timeout-ms", "500"};
    full.insert(full.end(), args.begin(), args.end());
    r = Ctl(full);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": accepted, then the agent is unreachable\n" << r.err;
    EXPECT_NE(r.err.find("agent 127.0.0.1:1: UNAVAILABLE"), std::string::npos) << r.err;
  }
}

TEST_F(CtlUsageTest, AnUnreachableAgentIsARuntimeError) {
  CtlResult r = Ctl({"status", "--agent", "127.0.0.1:1", "--timeout-ms", "500"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("agent 127.0.0.1:1: "), std::string::npos) << r.err;
  // A watch that cannot start says where to resume from.
  r = Ctl({"watch", "--agent", "127.0.0.1:1", "--from", "42"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("agent 127.0.0.1:1: UNAVAILABLE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("resume with: kspoolctl watch --from 42"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kspool
