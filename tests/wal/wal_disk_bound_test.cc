// The bound holds on disk, not only in the WAL's own accounting: with one message in 8
// of every batch record stuck (a leaderless partition of a keyed topic) and the rest
// settled as fast as they come, the WAL directory (RocksDB's logs and table files,
// tombstones and bitmaps included) stays within 1.25x Options::max_bytes while appends
// are refused for want of room. Sized from the bound: RocksDB's memtables and logs
// (open_db.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"

namespace kspool::wal {
namespace {

// What `du` would count, but in apparent bytes: RocksDB's compactions delete files while
// this walks, so a file gone since it was listed counts nothing.
uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir, ec)) {
    const uintmax_t n = std::filesystem::file_size(f.path(), ec);
    if (!ec) total += n;
  }
  return total;
}

TEST(WalDiskBound, OneStuckMessagePerRecordKeepsTheDirectoryWithinTheBound) {
  // One kspool thread; what runs beside it is RocksDB's compactions, whose
  // synchronization TSan cannot see in the uninstrumented library (false reports).
  if (kThreadSanitizer) GTEST_SKIP() << "RocksDB is not TSan-instrumented: false reports";
  kspool::testing::TempDir dir;
  ManualClock clock{1'000'000};
  constexpr uint64_t kBound = 4 << 20;
  Options o;
  o.dir = dir.path();
  o.clock = &clock;
  o.max_bytes = kBound;
  o.max_topic_bytes = kBound / 2;  // the stuck topic fills its share, the other goes on
  auto opened = Wal::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Wal> wal = std::move(opened).value();
  std::mt19937_64 rng(42);
  auto record = [&](const std::string& topic) {
    AppendBatch b;
    std::vector<std::string> values(48);
    for (std::string& v : values) {
      v.resize(1000);
      for (char& c : v) c = static_cast<char>('a' + rng() % 26);
    }
    for (const std::string& value : values) {
      RecordView v;
      v.topic = topic;
      v.key = "k";
      v.value = value;
      b.Add(v);
    }
    return b;
  };
  uint64_t appended = 0, stuck_refused = 0, largest = 0;
  // Each round: 2 records of the keyed topic whose every 8th message is stuck, and 16
  // of a healthy topic; then everything but the stuck messages settles.
  for (int round = 0; round < 150; ++round) {
    for (int r = 0; r < 2; ++r) {
      absl::StatusOr<AppendResult> res = wal->Append(record("stuck"));
      if (res.ok()) {
        appended += 48;
      } else {
        ASSERT_EQ(res.status().code(), absl::StatusCode::kResourceExhausted) << res.status();
        ++stuck_refused;
      }
    }
    for (int r = 0; r < 16; ++r) {
      absl::StatusOr<AppendResult> res = wal->Append(record("healthy"));
      ASSERT_TRUE(res.ok()) << "round " << round << ": " << res.status();
      appended += 48;
    }
    std::vector<Entry> settle;
    for (const Entry& e : ScanAll(wal.get())) {
      if (e.record.topic != "stuck" || e.seq % 8 != 0) settle.push_back(e);
    }
    if (!settle.empty()) ASSERT_TRUE(wal->Settle(Delivered(settle)).ok());
    largest = std::max(largest, DirBytes(dir.path()));
  }
  const Stats st = wal->GetStats();
  EXPECT_GT(stuck_refused, 0u) << "the stuck messages' records fill their topic's share";
  EXPECT_GT(appended * 1000, 20 * kBound) << "twenty times the bound went through";
  EXPECT_LE(st.bytes + st.held_bytes, kBound);
  EXPECT_LE(largest, kBound + kBound / 4)
      << "largest directory " << largest << " bytes; live " << st.bytes << ", held "
      << st.held_bytes << ", appended " << appended << " messages";
  std::cerr << "directory at most " << largest << " bytes (" << (100 * largest / kBound)
            << "% of the bound); " << appended << " messages appended, " << stuck_refused
            << " refusals of the stuck topic\n";
}

}  // namespace
}  // namespace kspool::wal
