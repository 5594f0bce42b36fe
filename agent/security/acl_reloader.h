// AclReloader: follows the --acl file as it is replaced or edited: looks at it (inode,
// size, modification time) every `poll` (0.5 s) and has AccessControl re-read it when
// it changed, so a change takes effect within about half a second. SIGHUP (main.cc)
// re-reads it at once through the agent.
// Thread safety: owns one polling thread; construction and destruction from one thread.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "agent/security/access_control.h"
#include "base/mutex.h"

namespace kspool::agent {

class AclReloader {
 public:
  // `access` must outlive this. `loaded`: AclFileFingerprint of the file taken before
  // `access` read it (so a change in between is seen).
  AclReloader(AccessControl* access, std::string loaded,
              std::chrono::milliseconds poll = std::chrono::milliseconds(500));
  ~AclReloader();  // stops the thread
  AclReloader(const AclReloader&) = delete;
  AclReloader& operator=(const AclReloader&) = delete;

 private:
  void Run();

  AccessControl* const access_;
  const std::chrono::milliseconds poll_;
  std::string last_;  // fingerprint of the file as last read; the thread's
  Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace kspool::agent
