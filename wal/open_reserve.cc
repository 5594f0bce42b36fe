// WalReserve (open_reserve.h): the reserve file's life, and the real file system's calls.
#include "wal/open_reserve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <vector>

#include "base/status.h"

namespace kspool::wal {
namespace {

// The path itself if it exists, else its nearest existing ancestor.
std::filesystem::path Existing(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return path;
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) {
    p = p.parent_path();
  }
  return p;
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "cannot open the directory", dir);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : ErrnoToStatus(err, "cannot sync the directory", dir);
}

// Writes zeros where fallocate is not supported: the blocks are allocated all the same.
int WriteZeros(int fd, uint64_t bytes) {
  std::vector<char> zeros(1 << 20, 0);
  for (uint64_t done = 0; done < bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), bytes - done));
    const ssize_t w = ::write(fd, zeros.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : ENOSPC;
    done += static_cast<uint64_t>(w);
  }
  return 0;
}

class PosixFs final : public ReserveFileSystem {
 public:
  absl::StatusOr<VolumeSpace> Space(const std::string& path) override {
    const std::filesystem::path p = Existing(path);
    struct statvfs st {};
    if (::statvfs(p.c_str(), &st) != 0) {
      return ErrnoToStatus(errno, "cannot read the free space of the volume of", p.string());
    }
    return VolumeSpace{static_cast<uint64_t>(st.f_bavail) * st.f_frsize,
                       static_cast<uint64_t>(st.f_blocks) * st.f_frsize};
  }

  std::string MountPoint(const std::string& path) override {
    std::filesystem::path p = Existing(path);
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return path;
    while (p.has_parent_path() && p != p.parent_path()) {
      struct stat up {};
      if (::stat(p.parent_path().c_str(), &up) != 0 || up.st_dev != st.st_dev) break;
      p = p.parent_path();
    }
    return p.string();
  }

  std::optional<uint64_t> FileSize(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<uint64_t>(st.st_size);
  }

  uint64_t FilesBytes(const std::string& dir, std::string_view suffix) override {
    uint64_t total = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(),
                                                      suffix.size(), suffix) != 0) {
        continue;
      }
      std::error_code size_ec;
      const uintmax_t size = e.file_size(size_ec);
      if (!size_ec) total += size;
    }
    return total;
  }

  absl::Status Allocate(const std::string& path, uint64_t bytes) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoToStatus(errno, "cannot create the reserve", path);
    int err = ::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
    if (err == EOPNOTSUPP) err = WriteZeros(fd, bytes);
    if (err == 0 && ::fsync(fd) != 0) err = errno;
    ::close(fd);
    if (err != 0) {
      ::unlink(path.c_str());
      return ErrnoToStatus(err, "cannot allocate " + std::to_string(bytes) + " bytes for",
                           path);
    }
    return SyncDir(std::filesystem::path(path).parent_path().string());
  }

  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoToStatus(errno, "cannot delete the reserve", path);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::shared_ptr<ReserveFileSystem> PosixReserveFileSystem() {
  return std::make_shared<PosixFs>();
}

absl::StatusOr<uint64_t> ResolveReserveBytes(uint64_t configured, uint64_t volume_bytes) {
  uint64_t bytes = configured;
  if (bytes == 0) {
    bytes = std::clamp(volume_bytes / 8, kMinReserveBytes, kMaxAutoReserveBytes);
  }
  if (bytes < kMinReserveBytes) {
    return absl::InvalidArgumentError(
        "--wal-reserve-bytes " + std::to_string(bytes) + " is too small: at least " +
        std::to_string(kMinReserveBytes) + " (4MiB), the room the WAL needs to open on a "
        "full volume");
  }
  if (bytes > volume_bytes / 4) {
    return absl::InvalidArgumentError(
        "--wal-reserve-bytes " + std::to_string(bytes) + " is more than a quarter of the WAL's "
        "volume (" + std::to_string(volume_bytes) + " bytes)" +
        (configured == 0 ? ": the volume is too small for the WAL" : ""));
  }
  return bytes;
}

absl::StatusOr<uint64_t> ResolveReserveBytesFor(const std::string& dir, uint64_t configured) {
  absl::StatusOr<VolumeSpace> space = PosixFs().Space(dir);
  if (!space.ok()) return space.status();
  return ResolveReserveBytes(configured, space->total_bytes);
}

WalReserve::WalReserve(std::string dir, uint64_t bytes, std::shared_ptr<ReserveFileSystem> fs)
    : dir_(std::move(dir)),
      path_(dir_ + "/" + kReserveFileName),
      bytes_(bytes),
      fs_(fs ? std::move(fs) : PosixReserveFileSystem()) {}

bool WalReserve::missing() const { return missing_.load(std::memory_order_acquire); }

bool WalReserve::MakeIfRoom(uint64_t free_bytes, uint64_t extra) {
  if (free_bytes < bytes_ + extra) return false;
  if (!fs_->Allocate(path_, bytes_).ok()) return false;
  missing_.store(false, std::memory_order_release);
  return true;
}

absl::Status WalReserve::BeforeOpen(bool first_start, bool ran_out_of_space) {
  MutexLock l(&mu_);
  std::optional<uint64_t> held = fs_->FileSize(path_);
  if (held && *held != bytes_) {  // another size configured, or a half-made one
    RETURN_IF_ERROR(fs_->Remove(path_));
    held.reset();
  }
  absl::StatusOr<VolumeSpace> space = fs_->Space(dir_);
  if (!space.ok()) return space.status();
  // The replayed logs become a table file before RocksDB deletes them.
  const uint64_t open_needs = fs_->FilesBytes(dir_, ".log") + kOpenMarginBytes;
  if (held) {
    const bool release = ran_out_of_space || space->free_bytes < open_needs;
    missing_.store(release, std::memory_order_release);
    if (release) RETURN_IF_ERROR(fs_->Remove(path_));
    return absl::OkStatus();
  }
  missing_.store(true, std::memory_order_release);
  // A first start needs the reserve and room to open; a missing one comes back only with
  // room for new messages too, as in Restore().
  if (MakeIfRoom(space->free_bytes, first_start ? open_needs : bytes_)) return absl::OkStatus();
  if (!first_start) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      "the volume of the WAL directory " + dir_ + " (mounted at " + fs_->MountPoint(dir_) +
      ") has " + std::to_string(space->free_bytes) + " bytes free: a new WAL needs " +
      std::to_string(bytes_ + open_needs) + " (its reserve, --wal-reserve-bytes " +
      std::to_string(bytes_) + ", and room to open); free space on it or use another volume");
}

bool WalReserve::Restore() {
  MutexLock l(&mu_);
  if (!missing()) return false;
  absl::StatusOr<VolumeSpace> space = fs_->Space(dir_);
  return space.ok() && MakeIfRoom(space->free_bytes, bytes_);
}

absl::Status WalReserve::RefusalStatus() const {
  return absl::UnavailableError(
      "no_reserve: the WAL's volume is short of space; its reserve (" + path_ + ", " +
      std::to_string(bytes_) + " bytes) was released so the WAL could open, and new messages "
      "are refused until the volume has room for it again, so what is left goes to delivering "
      "what the WAL holds (it is made again once the volume has twice its size free)");
}

}  // namespace kspool::wal
