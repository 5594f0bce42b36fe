// A wall-clock step, black box: a real agent process under libfaketime (wall clock
// moved at run time through a timestamp file, monotonic clock untouched). A step back
// of an hour or forward of a day must change nothing but receive times: settling,
// commit-point updates and retries go on, the WAL drains, the commit point never
// decreases, and the idle agent does not spin.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using namespace std::chrono_literals;
using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text << "\n";
}

// utime + stime of a process, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  unsigned long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoul(field);
    if (i == 15) stime = std::stoul(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(ClockStep, WallClockStepsBackAnHourAndForwardADayChangeNothingElse) {
  ASSERT_EQ(access(KSPOOL_FAKETIME_LIB, R_OK), 0)
      << KSPOOL_FAKETIME_LIB << " is missing: install libfaketime (tools/install-deps.sh)";
  kspool::testing::TempDir dir;
  DevKafka kafka(dir.sub("kafka.log"), 1, {"t:3"});
  const std::string step_file = dir.sub("faketime");
  WriteFile(step_file, "+0");
  AgentProcess agent(dir.sub("wal"), dir.sub("agent.log"), kafka.bootstrap(),
                     {"--retry-backoff-ms", "50"},
                     {std::string("LD_PRELOAD=") + KSPOOL_FAKETIME_LIB,
                      "FAKETIME_TIMESTAMP_FILE=" + step_file, "FAKETIME_DONT_FAKE_MONOTONIC=1",
                      "FAKETIME_NO_CACHE=1"});
  int64_t last_point = 0;
  auto check_point = [&] {
    const int64_t p = agent.CommitPoint().commit_point_ms();
    EXPECT_GE(p, last_point) << "the commit point went back";
    last_point = std::max(last_point, p);
  };
  int sent = 0;
  for (const auto& [step, offset_ms] : std::vector<std::pair<std::string, int64_t>>{
           {"+0", 0}, {"-3600", -3'600'000}, {"+86400", 86'400'000}}) {
    SCOPED_TRACE("step " + step);
    WriteFile(step_file, step);
    bool stepped = false;
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         !stepped && std::chrono::steady_clock::now() < deadline;) {
      const int64_t skew = agent.CommitPoint().now_ms() - WallMs() - offset_ms;
      stepped = skew > -60'000 && skew < 60'000;
      if (!stepped) std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(stepped) << "the agent's wall clock did not follow " << step;
    check_point();
    for (int b = 0; b < 10; ++b) {
      kspool::v1::SendRequest req;
      for (int i = 0; i < 200; ++i) {
        auto* m = req.add_messages();
        m->set_topic("t");
        m->set_value("m-" + std::to_string(sent++));
      }
      kspool::v1::SendResponse resp;
      grpc::Status s = agent.Send(req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
    bool drained = false;
    for (auto deadline = std::chrono::steady_clock::now() + 30s;
         !drained && std::chrono::steady_clock::now() < deadline;) {
      check_point();
      drained = agent.WalStats().entries() == 0;
      if (!drained) std::this_thread::sleep_for(50ms);
    }
    if (!drained) {
      std::ifstream log(dir.sub("agent.log"));
      std::vector<std::string> lines;
      for (std::string line; std::getline(log, line);) lines.push_back(line);
      std::string tail;
      for (size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i) {
        tail += lines[i] + "\n";
      }
      ADD_FAILURE() << "the WAL kept " << agent.WalStats().entries()
                    << " entries after the step; the agent's log ends:\n" << tail;
    }
  }
  auto records = kspool::testing::ReadTopic(kafka.bootstrap(), "t", 6000, 30s);
  std::set<std::string> values;
  for (const auto& r : records) values.insert(r.value);
  EXPECT_EQ(values.size(), 6000u);

  // Idle after a day's jump: no busy loop (a spinning drain burns ~1 core).
  const double before = CpuSeconds(agent.process().pid());
  std::this_thread::sleep_for(2s);
  EXPECT_LT(CpuSeconds(agent.process().pid()) - before, 0.5);
  check_point();
}

}  // namespace
}  // namespace kspool
