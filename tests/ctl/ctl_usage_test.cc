// kspoolctl refuses clearly: paths that are not a kspool WAL (and it creates nothing
// there), and bad command lines (exit code 2). No agent involved.
#include <gtest/gtest.h>

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
                                        {"send", "--topic", "t", "--header", "novalue", "v"}}) {
    CtlResult r = Ctl(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
  }
  CtlResult r = Ctl({"dead", "replay", dir});
  EXPECT_NE(r.err.find("choose the dead letters to replay with --seq, --topic, --reason, or --all"),
            std::string::npos) << r.err;
}

TEST_F(CtlUsageTest, AnUnreachableAgentIsARuntimeError) {
  CtlResult r = Ctl({"status", "--agent", "127.0.0.1:1", "--timeout-ms", "500"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("agent 127.0.0.1:1: "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kspool
