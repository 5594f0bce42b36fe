// `kspoolctl wal stats` shows the settled watermarks (wal/FORMAT.md, "Settled
// watermarks") of a WAL written in process: a table in text, a list in JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool {
namespace {

using kspool::testing::CtlResult;
using kspool::testing::ExpectGolden;
using kspool::testing::Normalize;
using kspool::testing::RunCtl;
using nlohmann::json;

class CtlWatermarks : public ::testing::Test {
 protected:
  // Three messages to "orders" delivered to partitions 0 (offsets 41, 42) and 12
  // (offset 7), one to "audit" discarded.
  void SetUp() override {
    wal::Options o;
    o.dir = wal_;
    auto opened = wal::Wal::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status();
    std::unique_ptr<wal::Wal> w = std::move(opened).value();
    agent_id_ = w->agent_id();
    ASSERT_TRUE(w->Append(wal::MakeBatch("orders", 3, "v")).ok());
    ASSERT_TRUE(w->Append(wal::MakeBatch("audit", 1, "v")).ok());
    std::vector<wal::Entry> e = wal::ScanAll(w.get());
    ASSERT_EQ(e.size(), 4u);
    std::vector<wal::Outcome> batch = wal::Delivered({e[0], e[1], e[2]});
    const std::vector<std::pair<int32_t, int64_t>> where = {{0, 41}, {0, 42}, {12, 7}};
    for (size_t i = 0; i < where.size(); ++i) {
      batch[i].partition = where[i].first;
      batch[i].offset = where[i].second;
    }
    batch.push_back(wal::SettleDiscarded(e[3].seq, "audit", e[3].size, "msg_size_too_large",
                                         "too large", wal::EncodeRecord(e[3].record)));
    ASSERT_TRUE(w->Settle(batch).ok());
  }

  kspool::testing::TempDir tmp_;
  const std::string wal_ = tmp_.sub("wal");
  std::string agent_id_;
};

TEST_F(CtlWatermarks, WalStatsShowsEachPartitionsWatermarkAsTextAndJson) {
  CtlResult r = RunCtl({"wal", "stats", wal_}, tmp_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectGolden("wal_stats_watermarks", Normalize(r.out, {{wal_, "<wal>"}, {agent_id_, "<agent-id>"}}));

  r = RunCtl({"--json", "wal", "stats", wal_}, tmp_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json stats = json::parse(r.out);
  EXPECT_EQ(stats["watermarks"], json::parse(R"([{"topic": "orders", "partition": 0, "offset": 42},
                                                  {"topic": "orders", "partition": 12, "offset": 7}])"));
}

}  // namespace
}  // namespace kspool
