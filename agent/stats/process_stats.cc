#include "agent/stats/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"

namespace kspool::agent {
namespace {

absl::StatusOr<std::string> ReadLine(const char* path) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line)) return absl::UnavailableError(std::string("cannot read ") + path);
  return line;
}

// Seconds since boot, from the "btime" line of /proc/stat (the boot time, Unix seconds).
absl::StatusOr<double> BootTime() {
  std::ifstream f("/proc/stat");
  std::string key;
  while (f >> key) {
    if (key == "btime") {
      double t = 0;
      if (f >> t) return t;
      break;
    }
    f.ignore(1 << 20, '\n');
  }
  return absl::UnavailableError("no btime line in /proc/stat");
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats() {
  ProcessStats s;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  // /proc/self/stat: "pid (comm) state ..." where comm may hold spaces or ')': the
  // fields after the last ')' start at field 3 (state); utime is 14, stime 15,
  // starttime 22 (clock ticks after boot), rss 24 (pages).
  absl::StatusOr<std::string> stat = ReadLine("/proc/self/stat");
  if (!stat.ok()) return stat.status();
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return absl::UnavailableError("unparsable /proc/self/stat");
  std::istringstream rest(stat->substr(close + 1));
  std::string field;
  uint64_t utime = 0, stime = 0, start = 0;
  int64_t rss_pages = 0;
  int i = 3;
  bool parsed = true;
  for (; i <= 24 && rest >> field; ++i) {
    if (i == 14) parsed &= absl::SimpleAtoi(field, &utime);
    if (i == 15) parsed &= absl::SimpleAtoi(field, &stime);
    if (i == 22) parsed &= absl::SimpleAtoi(field, &start);
    if (i == 24) parsed &= absl::SimpleAtoi(field, &rss_pages);
  }
  if (i <= 24 || !parsed) return absl::UnavailableError("unparsable /proc/self/stat");
  s.cpu_seconds = static_cast<double>(utime + stime) / tick;
  s.resident_bytes = static_cast<uint64_t>(std::max<int64_t>(0, rss_pages)) *
                     static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  absl::StatusOr<double> boot = BootTime();
  if (!boot.ok()) return boot.status();
  s.start_time_seconds = *boot + static_cast<double>(start) / tick;

  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return absl::UnavailableError("cannot open /proc/self/fd");
  while (const dirent* e = readdir(fds)) {
    if (e->d_name[0] != '.') ++s.open_fds;
  }
  closedir(fds);
  if (s.open_fds > 0) --s.open_fds;  // the directory stream's own descriptor

  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) {
    return absl::UnavailableError("getrlimit(RLIMIT_NOFILE) failed");
  }
  s.max_fds = nofile.rlim_cur;
  return s;
}

}  // namespace kspool::agent
