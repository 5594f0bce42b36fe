#include "tools/ctl/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kspool::ctl {

Progress::Progress(std::string what, uint64_t total, bool streams_stdout)
    : enabled_(isatty(STDERR_FILENO) == 1 && !(streams_stdout && isatty(STDOUT_FILENO) == 1)),
      what_(std::move(what)),
      total_(total),
      last_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (shown_) fprintf(stderr, "\r\033[K");
}

void Progress::Update(uint64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // Nothing for short scans; then five updates a second at most.
  if (now - last_ < std::chrono::milliseconds(shown_ ? 200 : 500)) return;
  last_ = now;
  shown_ = true;
  if (total_ > 0) {
    fprintf(stderr, "\r\033[K%s: %llu of %llu (%.0f%%)", what_.c_str(),
            static_cast<unsigned long long>(done), static_cast<unsigned long long>(total_),
            100.0 * static_cast<double>(std::min(done, total_)) / static_cast<double>(total_));
  } else {
    fprintf(stderr, "\r\033[K%s: %llu", what_.c_str(), static_cast<unsigned long long>(done));
  }
  fflush(stderr);
}

}  // namespace kspool::ctl
