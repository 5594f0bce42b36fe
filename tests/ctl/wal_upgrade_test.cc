// kspoolctl reads a WAL written by an earlier release (tests/wal/fixtures/, what it holds:
// tests/wal/fixtures/wal_fixture.h) with today's codec: stats, the live entries, one
// entry in full, the dead letters and a verify, as golden text; reading changes nothing.
#include <gtest/gtest.h>

#include <regex>

#include "tests/ctl/ctl_runner.h"
#include "tests/ctl/dir_snapshot.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/fixtures/wal_fixture.h"

namespace kspool {
namespace {

using kspool::testing::CtlResult;
using kspool::testing::DirSnapshot;
using kspool::testing::ExpectGolden;
using kspool::testing::Normalize;
using kspool::testing::RunCtl;

class CtlUpgrade : public ::testing::TestWithParam<std::string> {};

TEST_P(CtlUpgrade, ReadsAWalOfTheEarlierFormatAndChangesNothing) {
  kspool::testing::TempDir tmp;
  const std::string wal = tmp.sub("wal");
  wal::fixture::CopyTo(GetParam(), wal);
  const auto before = DirSnapshot(wal);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"stats", {"wal", "stats", wal}},    {"list", {"wal", "list", wal}},
      {"show", {"wal", "show", wal, "3"}}, {"dead_list", {"dead", "list", wal}},
      {"verify", {"wal", "verify", wal}},
  };
  for (const auto& [name, args] : cases) {
    CtlResult r = RunCtl(args, tmp.path());
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    // Both fixtures tell the same story, so they share their goldens; their agent ids
    // (made at random by the first open) differ.
    std::string out = std::regex_replace(r.out, std::regex("agent id       [0-9a-f]{16}"),
                                         "agent id       <agent-id>");
    // Version-1 entries have no bitmaps; the batch records of the format-2 fixture have
    // two (part-settled). Whether they check out is what the golden keeps.
    out = std::regex_replace(out, std::regex("bitmaps        [0-9]+, ok"), "bitmaps        <n>, ok");
    ExpectGolden("upgrade_v1_" + name, Normalize(out, {{wal, "<wal>"}}));
  }
  EXPECT_EQ(DirSnapshot(wal), before) << "kspoolctl changed the WAL it read";
}

INSTANTIATE_TEST_SUITE_P(Fixture, CtlUpgrade, ::testing::ValuesIn(wal::fixture::Dirs()),
                         [](const auto& info) { return wal::fixture::TestName(info.param); });

}  // namespace
}  // namespace kspool
