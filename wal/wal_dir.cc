#include "wal/wal_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "wal/rocks_status.h"

namespace kspool::wal {
namespace {

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// mkdir -p for the parents of `dir` (mode 0777 less the umask, as mkdir -p makes them).
absl::Status MakeParents(const std::string& dir) {
  for (size_t i = dir.find('/', 1); i != std::string::npos; i = dir.find('/', i + 1)) {
    const std::string parent = dir.substr(0, i);
    if (mkdir(parent.c_str(), 0777) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "cannot create a parent of the WAL directory " + dir + ":",
                           parent);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckWalDirNotWorldWritable(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoToStatus(errno, "cannot examine the WAL directory", dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError("the WAL directory " + dir + " is not a directory");
  }
  if (st.st_mode & S_IWOTH) {
    return absl::FailedPreconditionError(
        "the WAL directory " + dir + " is world-writable (mode " + Octal(st.st_mode) +
        "): any local user could change or remove the messages it holds; make it private "
        "(chmod 0700 " +
        dir + ") or use another directory");
  }
  return absl::OkStatus();
}

absl::Status PrepareWalDir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoToStatus(errno, "cannot examine the WAL directory", dir);
    if (absl::Status s = MakeParents(dir); !s.ok()) return s;
    // 0700 less the umask: never more than the agent's own user.
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "cannot create the WAL directory", dir);
    }
  }
  return CheckWalDirNotWorldWritable(dir);
}

}  // namespace kspool::wal
