// What a test reads of a real agent process's memory: its RSS (/proc/<pid>/status) and
// one metric of its /metrics page.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>

#include "tests/support/http_get.h"

namespace kspool::testing {

inline constexpr int64_t kMiB = 1 << 20;

inline int64_t RssBytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// The metric's value, -1 when the page does not have it.
inline double Metric(const std::string& http, const std::string& name) {
  std::map<std::string, double> m = ScrapeMetrics(http);
  auto it = m.find(name);
  return it == m.end() ? -1 : it->second;
}

}  // namespace kspool::testing
