// ChildProcess: a process a test starts (and only those are ever signalled), with its
// stdout readable line by line and its stderr kept in a log file. The child gets
// SIGKILL if the test process dies, so nothing outlives a crashed test.
// Thread safety: one owning thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kspool::testing {

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`; stderr goes to `stderr_path` (appended).
  ChildProcess(std::vector<std::string> argv, const std::string& stderr_path,
               std::vector<std::string> extra_env = {});
  ~ChildProcess();  // SIGKILLs the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads stdout until a line starting with `prefix` arrives; returns the rest of it.
  std::optional<std::string> WaitForLine(const std::string& prefix,
                                         std::chrono::milliseconds timeout);
  void Signal(int sig);
  // Waits for exit; returns the wait status, or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool exited_ = false;
  int status_ = 0;
};

}  // namespace kspool::testing
