#include "agent/security/acl_reloader.h"

namespace kspool::agent {

AclReloader::AclReloader(AccessControl* access, std::string loaded, std::chrono::milliseconds poll)
    : access_(access), poll_(poll), last_(std::move(loaded)) {
  thread_ = std::thread([this] { Run(); });
}

AclReloader::~AclReloader() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  thread_.join();
}

void AclReloader::Run() {
  MutexLock lock(&mu_);
  while (!stop_) {
    cv_.WaitFor(&mu_, poll_);
    if (stop_) break;
    const std::string now = AclFileFingerprint(access_->path());
    if (now == last_) continue;
    last_ = now;
    // Reload logs and counts a failure itself; the old rules stay until the file
    // changes again (or SIGHUP).
    (void)access_->Reload();
  }
}

}  // namespace kspool::agent
