// The standard process metrics on /metrics of a real kspool-agent process, checked
// against what /proc says about that process from outside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::ScrapeMetrics;
using namespace std::chrono_literals;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// utime + stime of process `pid` in seconds (fields 14 and 15 after the name).
double ProcCpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  std::istringstream rest(line.substr(line.rfind(')') + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

// The soft "Max open files" limit in /proc/PID/limits.
double ProcMaxFds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Max open files", 0) == 0) {
      std::istringstream in(line.substr(std::string("Max open files").size()));
      double soft = -1;
      in >> soft;
      return soft;
    }
  }
  return -1;
}

double ProcRssBytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  }
  return -1;
}

double ProcOpenFds(pid_t pid) {
  std::error_code ec;
  double n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

TEST(ProcessMetrics, MatchWhatProcSaysAboutTheAgent) {
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.path(), 1, {"t:2"});
  // A soft limit of its own, to see that the metric reports the agent's, not the test's.
  const double before_start = Now();
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(), {}, {},
                     {"/usr/bin/prlimit", "--nofile=3000:4000"});
  const double after_ready = Now();
  const pid_t pid = agent.process().pid();

  std::map<std::string, double> first = ScrapeMetrics(agent.http_address());
  ASSERT_TRUE(first.count("process_cpu_seconds_total")) << "GET /metrics has the process metrics";
  // /proc/stat's btime is in whole seconds: the start time is within a second of truth.
  EXPECT_GE(first["process_start_time_seconds"], before_start - 1.5);
  EXPECT_LE(first["process_start_time_seconds"], after_ready + 1.5);
  EXPECT_EQ(first["process_max_fds"], ProcMaxFds(pid));
  EXPECT_GT(first["process_open_fds"], 3) << "the WAL, sockets and stdio are open";
  EXPECT_NEAR(first["process_open_fds"], ProcOpenFds(pid), 8);
  EXPECT_NEAR(first["process_resident_memory_bytes"], ProcRssBytes(pid), ProcRssBytes(pid) * 0.25);
  EXPECT_GT(first["process_resident_memory_bytes"], 1 << 20);

  // Work makes the agent's CPU time grow, and the metric follows what /proc says.
  kspool::v1::SendRequest req;
  for (int i = 0; i < 100; ++i) {
    auto* m = req.add_messages();
    m->set_topic("t");
    m->set_value(std::string(100, 'v'));
  }
  for (int i = 0; i < 300; ++i) {
    kspool::v1::SendResponse resp;
    ASSERT_TRUE(agent.Send(req, &resp).ok());
  }
  ASSERT_TRUE(agent.WaitUntilDrained(30s));
  const double cpu_before_scrape = ProcCpuSeconds(pid);
  std::map<std::string, double> second = ScrapeMetrics(agent.http_address());
  const double cpu_after_scrape = ProcCpuSeconds(pid);
  EXPECT_GT(second["process_cpu_seconds_total"], first["process_cpu_seconds_total"]);
  EXPECT_GE(second["process_cpu_seconds_total"], cpu_before_scrape);
  EXPECT_LE(second["process_cpu_seconds_total"], cpu_after_scrape);
  EXPECT_EQ(second["process_start_time_seconds"], first["process_start_time_seconds"]);
}

}  // namespace
}  // namespace kspool
