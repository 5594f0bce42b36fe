// WalReserve: the reserve file is kept while the volume has room to open the WAL,
// deleted before an open that needs its room or after the WAL ran out of space, made
// again once the volume has twice its size free; a first start without room is refused naming the volume. The WAL refuses
// appends (UNAVAILABLE, no_reserve) while it is missing. Free space and preallocation
// are faked through ReserveFileSystem.
#include "wal/open_reserve.h"

#include <gtest/gtest.h>

#include <map>

#include "tests/support/temp_dir.h"
#include "tests/wal/wal_test_util.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class FakeReserveFs final : public ReserveFileSystem {
 public:
  absl::StatusOr<VolumeSpace> Space(const std::string&) override {
    return VolumeSpace{free_bytes, total_bytes};
  }
  std::string MountPoint(const std::string&) override { return "/mnt/spool"; }
  std::optional<uint64_t> FileSize(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  uint64_t FilesBytes(const std::string&, std::string_view) override { return log_bytes; }
  absl::Status Allocate(const std::string& path, uint64_t bytes) override {
    ++allocations;
    if (fail_allocate || bytes > free_bytes) return absl::ResourceExhaustedError("ENOSPC");
    files[path] = bytes;
    free_bytes -= bytes;
    return absl::OkStatus();
  }
  absl::Status Remove(const std::string& path) override {
    auto it = files.find(path);
    if (it != files.end()) {
      free_bytes += it->second;
      files.erase(it);
    }
    return absl::OkStatus();
  }
  bool Holds(const std::string& dir) const { return files.count(dir + "/KSPOOL_RESERVE") > 0; }

  uint64_t free_bytes = 100 * kMiB;
  uint64_t total_bytes = 200 * kMiB;
  uint64_t log_bytes = 0;
  bool fail_allocate = false;
  int allocations = 0;
  std::map<std::string, uint64_t> files;
};

TEST(WalReserveSize, AutomaticIsAnEighthOfTheVolumeFrom4MiBTo256MiB) {
  EXPECT_EQ(*ResolveReserveBytes(0, 800 * kMiB), 100 * kMiB);
  EXPECT_EQ(*ResolveReserveBytes(0, 100ull * 1024 * kMiB), 256 * kMiB);
  EXPECT_EQ(*ResolveReserveBytes(0, 20 * kMiB), 4 * kMiB);
  EXPECT_EQ(*ResolveReserveBytes(6 * kMiB, 48 * kMiB), 6 * kMiB);
}

TEST(WalReserveSize, BelowTheMinimumOrAboveAQuarterOfTheVolumeIsRefusedNamingTheFlag) {
  absl::StatusOr<uint64_t> small = ResolveReserveBytes(kMiB, 800 * kMiB);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("--wal-reserve-bytes"), std::string::npos);
  absl::StatusOr<uint64_t> large = ResolveReserveBytes(300 * kMiB, 800 * kMiB);
  ASSERT_FALSE(large.ok());
  EXPECT_NE(large.status().message().find("--wal-reserve-bytes"), std::string::npos);
  EXPECT_FALSE(ResolveReserveBytes(0, 12 * kMiB).ok()) << "a volume too small for any reserve";
}

TEST(WalReserve, AFirstStartWithRoomMakesTheReserve) {
  auto fs = std::make_shared<FakeReserveFs>();
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(/*first_start=*/true).ok());
  EXPECT_FALSE(r.missing());
  EXPECT_EQ(fs->files["/w/KSPOOL_RESERVE"], 8 * kMiB);
}

TEST(WalReserve, AFirstStartWithoutRoomIsRefusedNamingTheVolume) {
  auto fs = std::make_shared<FakeReserveFs>();
  fs->free_bytes = 9 * kMiB;  // the reserve, not the room to open as well
  WalReserve r("/w", 8 * kMiB, fs);
  absl::Status s = r.BeforeOpen(/*first_start=*/true);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_NE(s.message().find("/mnt/spool"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--wal-reserve-bytes"), std::string::npos) << s;
  EXPECT_FALSE(fs->Holds("/w"));
}

TEST(WalReserve, AnOpenWithRoomKeepsTheReserve) {
  auto fs = std::make_shared<FakeReserveFs>();
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(true).ok());
  fs->log_bytes = 10 * kMiB;
  ASSERT_TRUE(r.BeforeOpen(false).ok());
  EXPECT_FALSE(r.missing());
  EXPECT_TRUE(fs->Holds("/w"));
  EXPECT_EQ(fs->allocations, 1) << "kept, not made again";
}

TEST(WalReserve, AnOpenOnAVolumeTooFullToOpenReleasesTheReserveFirst) {
  auto fs = std::make_shared<FakeReserveFs>();
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(true).ok());
  fs->free_bytes = 0;
  fs->log_bytes = 3 * kMiB;  // the replayed logs need a table file of about that much
  ASSERT_TRUE(r.BeforeOpen(false).ok());
  EXPECT_TRUE(r.missing());
  EXPECT_FALSE(fs->Holds("/w"));
  EXPECT_EQ(fs->free_bytes, 8 * kMiB);
  EXPECT_TRUE(absl::IsUnavailable(r.RefusalStatus()));
  EXPECT_NE(r.RefusalStatus().message().find("no_reserve"), std::string::npos);
}

TEST(WalReserve, ARestartWithoutRoomForTheReserveOpensWithoutIt) {
  auto fs = std::make_shared<FakeReserveFs>();
  fs->free_bytes = 5 * kMiB;
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(/*first_start=*/false).ok());
  EXPECT_TRUE(r.missing());
}

TEST(WalReserve, AReopenAfterTheWalRanOutOfSpaceReleasesItEvenWithRoomToOpen) {
  auto fs = std::make_shared<FakeReserveFs>();
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(true).ok());
  fs->free_bytes = 5 * kMiB;  // what RocksDB had preallocated for its log, given back
  ASSERT_TRUE(r.BeforeOpen(false, /*ran_out_of_space=*/true).ok());
  EXPECT_TRUE(r.missing());
  EXPECT_FALSE(fs->Holds("/w"));
  EXPECT_FALSE(r.Restore()) << "13 MiB free: not room for the reserve and as much again";
}

TEST(WalReserve, ItIsMadeAgainOnlyOnceTheVolumeHasTwiceItsSizeFree) {
  auto fs = std::make_shared<FakeReserveFs>();
  fs->free_bytes = 0;
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(false).ok());
  ASSERT_TRUE(r.missing());
  fs->free_bytes = 16 * kMiB - 1;
  EXPECT_FALSE(r.Restore());
  EXPECT_TRUE(r.missing());
  fs->free_bytes = 16 * kMiB;
  EXPECT_TRUE(r.Restore());
  EXPECT_FALSE(r.missing());
  EXPECT_TRUE(fs->Holds("/w"));
  EXPECT_FALSE(r.Restore()) << "nothing to do while it is held";
}

TEST(WalReserve, AFailedPreallocationLeavesItMissingAndIsTriedAgain) {
  auto fs = std::make_shared<FakeReserveFs>();
  fs->free_bytes = 0;
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(false).ok());
  fs->free_bytes = 50 * kMiB;
  fs->fail_allocate = true;
  EXPECT_FALSE(r.Restore());
  EXPECT_TRUE(r.missing());
  fs->fail_allocate = false;
  EXPECT_TRUE(r.Restore());
  EXPECT_FALSE(r.missing());
}

TEST(WalReserve, AReserveOfAnotherSizeIsReplaced) {
  auto fs = std::make_shared<FakeReserveFs>();
  fs->files["/w/KSPOOL_RESERVE"] = 3 * kMiB;
  WalReserve r("/w", 8 * kMiB, fs);
  ASSERT_TRUE(r.BeforeOpen(false).ok());
  EXPECT_FALSE(r.missing());
  EXPECT_EQ(fs->files["/w/KSPOOL_RESERVE"], 8 * kMiB);
}

// The WAL on a real directory, with the free space faked.
class WalWithReserve : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<Wal>> Open() {
    Options o;
    o.dir = dir_.sub("wal");
    o.reserve_bytes = 8 * kMiB;
    o.reserve_fs = fs_;
    return Wal::Open(o);
  }
  absl::Status Append(Wal* wal) {
    return wal->Append(MakeBatch("t", 2, "v")).status();
  }
  kspool::testing::TempDir dir_;
  std::shared_ptr<FakeReserveFs> fs_ = std::make_shared<FakeReserveFs>();
};

TEST_F(WalWithReserve, AnOpenOnAFullVolumeRefusesAppendsUntilTheReserveIsBack) {
  {
    auto wal = Open();
    ASSERT_TRUE(wal.ok()) << wal.status();
    ASSERT_TRUE(Append(wal->get()).ok());
    EXPECT_EQ((*wal)->GetStats().reserve_bytes, 8 * kMiB);
  }
  fs_->free_bytes = 0;
  auto wal = Open();
  ASSERT_TRUE(wal.ok()) << wal.status();
  Stats st = (*wal)->GetStats();
  EXPECT_TRUE(st.reserve_missing);
  EXPECT_EQ(st.reserve_bytes, 0u);
  absl::Status refused = Append(wal->get());
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_NE(refused.message().find("no_reserve"), std::string::npos) << refused;
  EXPECT_EQ((*wal)->GetStats().refused["no_reserve"], 1u);
  EXPECT_EQ(ScanAll(wal->get()).size(), 2u) << "what it held is still there to drain";

  EXPECT_FALSE((*wal)->RestoreReserve()) << "the volume is still full";
  fs_->free_bytes = 20 * kMiB;
  EXPECT_TRUE((*wal)->RestoreReserve());
  EXPECT_FALSE((*wal)->GetStats().reserve_missing);
  EXPECT_TRUE(Append(wal->get()).ok());
}

TEST_F(WalWithReserve, AFirstOpenWithoutRoomForTheReserveFailsAndCreatesNoWal) {
  fs_->free_bytes = kMiB;
  auto wal = Open();
  ASSERT_FALSE(wal.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(wal.status())) << wal.status();
  fs_->free_bytes = 100 * kMiB;
  EXPECT_TRUE(Open().ok()) << "a later start, with room, is a first start again";
}

}  // namespace
}  // namespace kspool::wal
