// TlsReloadMonitor: reports what happens when the TLS files change on disk. gRPC's file
// watcher (agent/tls_credentials.h) does the reloading itself but says nothing when a
// new certificate is unusable (it just keeps serving the old one), so this monitor
// looks at the same files on the same period and checks them the same way:
//  - files changed and usable: an info line ("TLS files reloaded");
//  - files changed and unusable (missing, not PEM, key not matching the certificate):
//    a warning naming the flag and the reason, and `on_failed()` once per change (the
//    agent counts kspool_degraded_events_total{event="tls_reload_failed"}); gRPC keeps
//    serving the previous certificate.
// A rotation that writes the certificate and the key one after the other can be seen
// half done; it is then reported as failed and, at the next poll, as reloaded.
// Thread safety: owns one polling thread; construct and destroy from one thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "agent/tls_credentials.h"

namespace kspool::agent {

class TlsReloadMonitor {
 public:
  TlsReloadMonitor(TlsFiles files, std::function<void()> on_failed,
                   std::chrono::milliseconds period = std::chrono::seconds(kTlsRefreshSeconds));
  ~TlsReloadMonitor();  // stops and joins the thread
  TlsReloadMonitor(const TlsReloadMonitor&) = delete;
  TlsReloadMonitor& operator=(const TlsReloadMonitor&) = delete;

 private:
  // What identifies a version of the files: inode, size and modification time of each.
  std::string Fingerprint() const;
  void Run();

  TlsFiles files_;
  std::function<void()> on_failed_;
  std::chrono::milliseconds period_;
  std::string last_;  // fingerprint of the files last checked
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kspool::agent
