#include "tools/bench/cpu.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kspool::bench {
namespace {

// utime + stime (fields 14 and 15 of /proc/.../stat) in seconds, and the name in
// parentheses (which may itself hold spaces or parentheses: take up to the last ')').
bool ReadStat(const std::string& path, std::string* name, double* seconds) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line)) return false;
  size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return false;
  *name = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  *seconds = double(utime + stime) / sysconf(_SC_CLK_TCK);
  return true;
}

std::string WithoutTrailingDigits(std::string s) {
  while (!s.empty() && std::isdigit(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

CpuSnapshot TakeCpuSnapshot(int agent_pid) {
  CpuSnapshot s;
  s.self_s = ProcessCpuSeconds();
  std::ifstream stat("/proc/stat");
  std::string cpu;
  unsigned long long v, total = 0, idle = 0;
  stat >> cpu;
  for (int i = 0; i < 8 && stat >> v; ++i) {  // user nice system idle iowait irq softirq steal
    total += v;
    if (i == 3 || i == 4) idle += v;
  }
  const double tick = 1.0 / sysconf(_SC_CLK_TCK);
  s.machine_total_s = total * tick;
  s.machine_busy_s = (total - idle) * tick;
  if (agent_pid <= 0) return s;
  const std::string dir = "/proc/" + std::to_string(agent_pid);
  std::string name;
  ReadStat(dir + "/stat", &name, &s.agent_s);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/task", ec)) {
    double sec = 0;
    if (ReadStat(e.path().string() + "/stat", &name, &sec)) {
      s.agent_threads[std::stoi(e.path().filename().string())] = {name, sec};
    }
  }
  return s;
}

nlohmann::json CpuReport(const CpuSnapshot& a, const CpuSnapshot& b, int agent_pid,
                         double messages) {
  nlohmann::json j;
  j["bench_s"] = b.self_s - a.self_s;
  const double total = b.machine_total_s - a.machine_total_s;
  j["machine_busy"] = total > 0 ? (b.machine_busy_s - a.machine_busy_s) / total : 0;
  std::ifstream load("/proc/loadavg");
  std::string l1, l5, l15;
  load >> l1 >> l5 >> l15;
  j["loadavg"] = l1 + " " + l5 + " " + l15;
  if (agent_pid <= 0) return j;
  const double agent = b.agent_s - a.agent_s;
  j["agent_s"] = agent;
  j["agent_us_per_msg"] = messages > 0 ? agent / messages * 1e6 : 0;
  std::map<std::string, double> by_name;
  double threads = 0;
  for (const auto& [tid, t] : b.agent_threads) {
    auto it = a.agent_threads.find(tid);
    double d = t.second - (it == a.agent_threads.end() ? 0 : it->second.second);
    by_name[WithoutTrailingDigits(t.first)] += d;
    threads += d;
  }
  if (agent - threads > 0.005) by_name["(threads that exited)"] = agent - threads;
  j["agent_threads"] = by_name;
  return j;
}

}  // namespace kspool::bench
