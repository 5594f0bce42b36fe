// --wal-reserve-bytes: 0 (automatic) by default; a size; below 4MiB or above a quarter
// of the WAL's volume the agent refuses to start (exit 2) naming the flag.
#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include "agent/app/config/config.h"
#include "tests/agent/app/config/parse_args.h"
#include "tests/support/temp_dir.h"

namespace kspool::agent {
namespace {

uint64_t VolumeBytes(const std::string& path) {
  struct statvfs st {};
  EXPECT_EQ(statvfs(path.c_str(), &st), 0);
  return static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
}

TEST(WalReserveFlag, DefaultsToAutomaticAndTakesASize) {
  kspool::testing::TempDir dir;
  ParseOutcome p = ParseArgs({"--wal-dir", dir.sub("wal")});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.reserve_bytes, 0u);
  p = ParseArgs({"--wal-dir", dir.sub("wal"), "--wal-reserve-bytes", "8MiB"});
  ASSERT_FALSE(p.exit) << p.output;
  EXPECT_EQ(p.config.wal.reserve_bytes, 8u << 20);
}

TEST(WalReserveFlag, BelowFourMiBOrAboveAQuarterOfTheVolumeExitsTwoNamingTheFlag) {
  kspool::testing::TempDir dir;
  const std::string quarter_and_more = std::to_string(VolumeBytes(dir.path()) / 4 + 1);
  for (const std::string& v : {std::string("1MiB"), quarter_and_more}) {
    ParseOutcome p = ParseArgs({"--wal-dir", dir.sub("wal"), "--wal-reserve-bytes", v});
    EXPECT_TRUE(p.exit) << v;
    EXPECT_EQ(p.exit_code, 2) << v;
    EXPECT_NE(p.output.find("--wal-reserve-bytes"), std::string::npos) << p.output;
    EXPECT_NE(p.output.find("volume"), std::string::npos) << p.output;
  }
}

}  // namespace
}  // namespace kspool::agent
