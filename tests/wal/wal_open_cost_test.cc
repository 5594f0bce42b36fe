// Opening does not read the bitmaps of part-settled records: one stuck partition of a
// keyed topic leaves one per record, and a backlog of millions of records must not make
// every open and reopen (under the locks that hold the drain and the appends) walk them.
#include <gtest/gtest.h>

#include "rocksdb/perf_context.h"
#include "rocksdb/perf_level.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/info_log.h"
#include "wal/open_db.h"
#include "wal/rocks_wal_meta.h"

namespace kspool::wal {
namespace {

TEST(WalOpenCost, ReadingTheMetaAtOpenPassesThePartSettledRecordsBitmaps) {
  kspool::testing::TempDir dir;
  ManualClock clock{1'000'000};
  constexpr int kRecords = 3000;
  {
    Options o;
    o.dir = dir.path();
    o.clock = &clock;
    auto wal = Wal::Open(o);
    ASSERT_TRUE(wal.ok()) << wal.status();
    for (int i = 0; i < kRecords; ++i) ASSERT_TRUE((*wal)->Append(MakeBatch("t", 2, "v")).ok());
    std::vector<Entry> e = ScanAll(wal->get());
    std::vector<Entry> first_of_each;
    for (size_t i = 0; i < e.size(); i += 2) first_of_each.push_back(e[i]);
    ASSERT_TRUE((*wal)->Settle(Delivered(first_of_each)).ok());  // a bitmap per record
  }
  absl::StatusOr<std::unique_ptr<OpenDb>> db =
      OpenDb::Open(dir.path(), nullptr, NewInfoLog(nullptr));
  ASSERT_TRUE(db.ok()) << db.status();
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  absl::StatusOr<MetaState> m =
      ReadMeta((*db)->db.get(), (*db)->meta, (*db)->IteratorOptions((*db)->meta));
  // Each key an iterator steps over costs it at least one comparison; a seek, a few
  // dozen in all.
  const uint64_t steps = rocksdb::get_perf_context()->user_key_comparison_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->topics["t"].held.count, static_cast<uint64_t>(kRecords));
  EXPECT_LT(steps, 600u) << "ReadMeta stepped over the " << kRecords << " bitmaps";
}

}  // namespace
}  // namespace kspool::wal
