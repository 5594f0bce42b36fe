// TmpfsVolume: a small, real file system for one test: a tmpfs of a fixed size mounted
// on a fresh directory, unmounted (lazily, so a process still holding a file cannot keep
// it) and removed when the object goes, also when the test fails. Mounting needs root
// (CAP_SYS_ADMIN); without it `error()` says why and the test skips. Also: filling the
// volume with a file of its own, and freeing it again.
// Thread safety: one owning thread.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace kspool::testing {

class TmpfsVolume {
 public:
  explicit TmpfsVolume(int mib) {
    path_ = dir_.sub("mnt");
    ::mkdir(path_.c_str(), 0755);
    const std::string opts = "size=" + std::to_string(mib) + "m,mode=0755";
    if (::mount("kspool-test", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
      error_ = "cannot mount a " + std::to_string(mib) + " MiB tmpfs on " + path_ + ": " +
               std::strerror(errno) + " (the test needs root; CI runs as root)";
      return;
    }
    mounted_ = true;
  }
  ~TmpfsVolume() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  TmpfsVolume(const TmpfsVolume&) = delete;
  TmpfsVolume& operator=(const TmpfsVolume&) = delete;

  // Empty when mounted; else why not.
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }
  // A directory outside the volume, for logs.
  std::string outside(const std::string& name) const { return dir_.sub(name); }

  uint64_t free_bytes() const {
    struct statvfs s {};
    if (::statvfs(path_.c_str(), &s) != 0) return 0;
    return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
  }
  // Writes `name` until the file system refuses (ENOSPC); returns the bytes written.
  uint64_t Fill(const std::string& name) {
    const int fd = ::open(sub(name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return 0;
    std::vector<char> chunk(64 << 10, 'x');
    uint64_t written = 0;
    while (true) {
      const ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;
      written += static_cast<uint64_t>(n);
    }
    ::close(fd);
    return written;
  }
  void Remove(const std::string& name) { ::unlink(sub(name).c_str()); }

 private:
  TempDir dir_;
  std::string path_;
  std::string error_;
  bool mounted_ = false;
};

}  // namespace kspool::testing
