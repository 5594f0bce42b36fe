// Progress: a one-line progress indication on stderr for long scans, shown only when
// stderr is a terminal (so scripts and pipes see nothing) and the scan's own output
// does not go to that terminal too, at most five times a second, erased at the end.
// Thread safety: one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace kspool::ctl {

class Progress {
 public:
  // `total`: the expected count (0 when unknown), for a percentage. `streams_stdout`:
  // the scan prints as it goes, so a terminal on stdout would interleave with it.
  Progress(std::string what, uint64_t total, bool streams_stdout);
  ~Progress();  // erases the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Update(uint64_t done);

 private:
  const bool enabled_;
  const std::string what_;
  const uint64_t total_;
  std::chrono::steady_clock::time_point last_;
  bool shown_ = false;
};

}  // namespace kspool::ctl
