#include "agent/tls_reload_monitor.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

namespace kspool::agent {

TlsReloadMonitor::TlsReloadMonitor(TlsFiles files, std::function<void()> on_failed,
                                   std::chrono::milliseconds period)
    : files_(std::move(files)), on_failed_(std::move(on_failed)), period_(period) {
  last_ = Fingerprint();  // the files the agent started with were checked by the config
  thread_ = std::thread([this] { Run(); });
}

TlsReloadMonitor::~TlsReloadMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string TlsReloadMonitor::Fingerprint() const {
  std::string f;
  for (const std::string* path : {&files_.cert, &files_.key, &files_.client_ca}) {
    struct stat st {};
    if (path->empty() || stat(path->c_str(), &st) != 0) {
      f += "-;";  // missing counts as a version of its own
      continue;
    }
    f += std::to_string(st.st_ino) + "," + std::to_string(st.st_size) + "," +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return f;
}

void TlsReloadMonitor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
    const std::string now = Fingerprint();
    if (now == last_) continue;
    last_ = now;
    absl::Status s = CheckTlsFiles(files_);
    if (s.ok()) {
      spdlog::info("TLS files reloaded: new connections get the certificate of {}", files_.cert);
      continue;
    }
    spdlog::warn(
        "TLS files changed but cannot be used ({}); still serving the previous "
        "certificate",
        std::string(s.message()));
    if (on_failed_) on_failed_();
  }
}

}  // namespace kspool::agent
