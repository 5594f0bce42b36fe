// A WAL read that fails part way (a damaged block of the log's table file): the choosing
// scan returns the entries taken before the damage with the error, and sets *next one
// past the last entry offered, so a reader moves past what it took (wal/drain_log.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/raw_wal.h"
#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

constexpr int kScannedEntries = 40;

TEST(WalPartialScan, ReadErrorPartWayReturnsWhatWasTakenAndMovesNextPastIt) {
  kspool::testing::TempDir dir;
  Options o;
  o.dir = dir.path();
  {
    absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
    ASSERT_TRUE(wal.ok()) << wal.status();
    uint32_t x = 1;  // values that do not compress: the table file gets many blocks
    for (int i = 0; i < kScannedEntries; ++i) {
      std::string value(3000, '\0');
      for (char& c : value) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
      ASSERT_TRUE((*wal)->Append(MakeBatch("t", 1, value)).ok());
    }
  }
  // Into a table file of many blocks, then one block in the middle damaged.
  ASSERT_TRUE(kspool::testing::WithRawWal(dir.path(), [](rocksdb::DB* db,
                                                         kspool::testing::RawHandles& cf) {
                return db->Flush(rocksdb::FlushOptions(), cf.at("log"));
              }).ok());
  std::filesystem::path largest;
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    if (f.path().extension() == ".sst" &&
        (largest.empty() || f.file_size() > std::filesystem::file_size(largest))) {
      largest = f.path();
    }
  }
  ASSERT_FALSE(largest.empty());
  const uintmax_t size = std::filesystem::file_size(largest);
  ASSERT_GT(size, 100'000u);
  {
    std::fstream f(largest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    const std::string junk(64, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }

  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(o);
  ASSERT_TRUE(wal.ok()) << wal.status();
  std::vector<Entry> out;
  uint64_t next = 0, last_offered = 0;
  size_t offered = 0;
  absl::Status s = (*wal)->ScanChoosing(
      {0, UINT64_MAX, 65536},
      [&](const ScanCandidate& c) {
        ++offered;
        last_offered = c.seq;
        return offered % 2 == 0 ? ScanChoice::kTake : ScanChoice::kSkip;
      },
      &out, &next);
  ASSERT_FALSE(s.ok()) << "the damaged block was not read";
  ASSERT_GT(offered, 0u);
  ASSERT_LT(offered, static_cast<size_t>(kScannedEntries));
  EXPECT_EQ(out.size(), offered / 2) << "every entry taken comes back";
  EXPECT_EQ(next, last_offered + 1);
}

}  // namespace
}  // namespace kspool::wal
