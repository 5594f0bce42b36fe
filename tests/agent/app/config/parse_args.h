// ParseArgs: runs the agent's configuration parser on a command line and an environment
// as the tests write them (without argv[0]), for every config test.
#pragma once

#include <string>
#include <vector>

#include "agent/app/config/config.h"

namespace kspool::agent {

inline ParseOutcome ParseArgs(std::vector<std::string> args, std::vector<std::string> env = {}) {
  args.insert(args.begin(), "kspool-agent");
  std::vector<const char*> argv, envp;
  for (auto& a : args) argv.push_back(a.c_str());
  for (auto& e : env) envp.push_back(e.c_str());
  envp.push_back(nullptr);
  return ParseConfig(static_cast<int>(argv.size()), argv.data(), envp.data());
}

}  // namespace kspool::agent
