#include "tools/ctl/wal_access.h"

#include <fcntl.h>
#include <unistd.h>

#include "tools/ctl/exit_codes.h"
#include "tools/ctl/progress.h"

namespace kspool::ctl {
namespace {

constexpr size_t kPageEntries = 1024;
constexpr size_t kPageBytes = 16 << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<wal::Wal>> OpenForReading(const std::string& dir) {
  wal::Options options;
  options.dir = dir;
  options.read_only = true;
  return wal::Wal::Open(std::move(options));
}

std::optional<pid_t> LockHolder(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  std::optional<pid_t> holder;
  if (fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK) holder = lock.l_pid;
  close(fd);
  return holder;
}

absl::StatusOr<std::unique_ptr<wal::Wal>> OpenForWriting(const std::string& dir) {
  // Validate first without touching anything: a read-write open would create a WAL in
  // a wrong directory, and RocksDB rotates the info log even when its lock fails.
  {
    absl::StatusOr<std::unique_ptr<wal::Wal>> probe = OpenForReading(dir);
    if (!probe.ok()) return probe.status();
  }
  auto in_use = [&](const std::string& who) {
    return WalInUse(absl::FailedPreconditionError(
        "WAL " + dir + " is in use by a running agent (" + who +
        " holds its lock); stop the agent first, or inspect it read-only with `wal` commands"));
  };
  if (std::optional<pid_t> pid = LockHolder(dir)) return in_use("process " + std::to_string(*pid));
  wal::Options options;
  options.dir = dir;
  absl::StatusOr<std::unique_ptr<wal::Wal>> wal = wal::Wal::Open(std::move(options));
  // An agent that started after the check above.
  if (!wal.ok() && wal.status().message().find("lock") != std::string::npos) {
    return in_use("another process");
  }
  return wal;
}

absl::Status ForEachEntry(wal::Inspection& wal, uint64_t from, const ScanProgress& shown,
                          const std::function<bool(const wal::Entry&)>& fn) {
  Progress progress(shown.what, shown.total, shown.streams_stdout);
  uint64_t done = 0;
  std::vector<wal::Entry> page;
  while (true) {
    page.clear();
    if (absl::Status s = wal.Scan(from, kPageEntries, kPageBytes, &page); !s.ok()) return s;
    if (page.empty()) return absl::OkStatus();
    for (const wal::Entry& e : page) {
      if (!fn(e)) return absl::OkStatus();
    }
    from = page.back().seq + 1;
    done += page.size();
    progress.Update(done);
  }
}

absl::Status ForEachDeadLetter(wal::Inspection& wal, uint64_t from, const ScanProgress& shown,
                               const std::function<bool(const wal::DeadLetter&)>& fn) {
  Progress progress(shown.what, shown.total, shown.streams_stdout);
  uint64_t done = 0;
  std::vector<wal::DeadLetter> page;
  while (true) {
    page.clear();
    if (absl::Status s = wal.ScanDeadLetters(from, kPageEntries, &page); !s.ok()) return s;
    if (page.empty()) return absl::OkStatus();
    for (const wal::DeadLetter& d : page) {
      if (!fn(d)) return absl::OkStatus();
    }
    from = page.back().seq + 1;
    done += page.size();
    progress.Update(done);
  }
}

}  // namespace kspool::ctl
