// Where the CPU went during a load, from /proc (no perf needed): the agent's CPU time in
// all and by thread name, the bench's own, and how busy the whole machine was (the
// agent, Kafka and the bench share its cores, and so may other work). Linux only.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace kspool::bench {

struct CpuSnapshot {
  double agent_s = 0;  // the agent process, exited threads included
  std::map<int, std::pair<std::string, double>> agent_threads;  // tid -> (name, seconds)
  double self_s = 0;                                            // this process
  double machine_busy_s = 0, machine_total_s = 0;               // all cores, from /proc/stat
};

// agent_pid 0: the agent's figures stay 0.
CpuSnapshot TakeCpuSnapshot(int agent_pid);

// This process's CPU time (user + system, all its threads) in seconds.
double ProcessCpuSeconds();

// {bench_s, machine_busy (0..1 of all cores), loadavg, and with an agent: agent_s,
// agent_us_per_msg, agent_threads {name without trailing digits: seconds}}.
nlohmann::json CpuReport(const CpuSnapshot& before, const CpuSnapshot& after, int agent_pid,
                         double messages);

}  // namespace kspool::bench
