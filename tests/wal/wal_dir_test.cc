// WalDir: a new WAL directory is private; a world-writable one is refused for writing,
// but can still be opened read-only (kspoolctl inspects it).
#include "wal/wal_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/temp_dir.h"
#include "wal/wal.h"

namespace kspool::wal {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

Options At(const std::string& dir, bool read_only = false) {
  Options o;
  o.dir = dir;
  o.read_only = read_only;
  return o;
}

TEST(WalDir, ANewWalDirectoryAndItsMissingParentsAreCreatedTheWalOne0700) {
  kspool::testing::TempDir tmp;
  const std::string dir = tmp.sub("a/b/wal");
  ASSERT_TRUE(Wal::Open(At(dir)).ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(tmp.sub("a")) & 0700, 0700u);  // parents as mkdir -p makes them
}

TEST(WalDir, AWorldWritableDirectoryIsRefusedNamingItAndItsMode) {
  kspool::testing::TempDir tmp;
  const std::string dir = tmp.sub("wal");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir.c_str(), 01777), 0);
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(At(dir));
  ASSERT_EQ(wal.status().code(), absl::StatusCode::kFailedPrecondition) << wal.status();
  EXPECT_NE(wal.status().message().find(dir), std::string::npos) << wal.status();
  EXPECT_NE(wal.status().message().find("mode 1777"), std::string::npos) << wal.status();
  EXPECT_EQ(ModeOf(dir), 01777u);  // not changed behind the operator's back
}

TEST(WalDir, AnExistingDirectorysModeIsKept) {
  kspool::testing::TempDir tmp;
  const std::string dir = tmp.sub("wal");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0750), 0);
  ASSERT_TRUE(Wal::Open(At(dir)).ok());
  EXPECT_EQ(ModeOf(dir), 0750u);
}

TEST(WalDir, AWorldWritableWalCanStillBeReadOnly) {
  kspool::testing::TempDir tmp;
  const std::string dir = tmp.sub("wal");
  ASSERT_TRUE(Wal::Open(At(dir)).ok());  // made, then closed
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  absl::StatusOr<std::unique_ptr<Wal>> ro = Wal::Open(At(dir, /*read_only=*/true));
  EXPECT_TRUE(ro.ok()) << ro.status();
}

TEST(WalDir, AFileInPlaceOfTheDirectoryIsRefused) {
  kspool::testing::TempDir tmp;
  const std::string dir = tmp.sub("wal");
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(rmdir(dir.c_str()), 0);
  FILE* f = fopen(dir.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_EQ(PrepareWalDir(dir).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kspool::wal
