#include "agent/security/tls_reloader.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <stdio.h>
#include <sys/stat.h>  // fchmod
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace kspool::agent {
namespace {

// Writes beside `path`, then renames over it: a reader sees the old or the new
// content, never a part. Mode 0600: it may hold a private key.
absl::Status WriteAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".new";
  FILE* f = fopen(tmp.c_str(), "wbx");
  if (!f) return absl::UnavailableError("cannot create " + tmp + ": " + std::strerror(errno));
  fchmod(fileno(f), 0600);
  const bool written = fwrite(content.data(), 1, content.size(), f) == content.size();
  if (fclose(f) != 0 || !written || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return absl::UnavailableError("cannot write " + path + ": " + why);
  }
  return absl::OkStatus();
}

constexpr char kDirPrefix[] = "kspool-tls-";

// Staged copies left by agents that were killed (SIGKILL, a crash: no destructor ran):
// the directories named for a process that is gone and owned by this user. Each holds
// a copy of a private key, so they are not left to pile up.
void RemoveStaleDirs(const std::filesystem::path& tmp) {
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kDirPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + sizeof(kDirPrefix) - 1, nullptr, 10);
    struct stat st {};
    if (pid <= 0 || lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid()) {
      continue;
    }
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still there
    std::filesystem::remove_all(entry.path(), ec);
    if (!ec) ++removed;
  }
  if (removed > 0) {
    spdlog::info("removed {} staged TLS director{} of agents that are gone", removed,
                 removed == 1 ? "y" : "ies");
  }
}

}  // namespace

TlsReloader::TlsReloader(TlsFiles files, std::function<void()> on_failed,
                         std::chrono::milliseconds poll)
    : files_(std::move(files)), on_failed_(std::move(on_failed)), poll_(poll) {}

absl::StatusOr<std::unique_ptr<TlsReloader>> TlsReloader::Start(TlsFiles files,
                                                                std::function<void()> on_failed,
                                                                std::chrono::milliseconds poll) {
  std::unique_ptr<TlsReloader> r(new TlsReloader(std::move(files), std::move(on_failed), poll));
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (!ec) RemoveStaleDirs(tmp);
  // The pid in the name tells a later agent whether its owner is gone.
  std::string tmpl = (tmp / (kDirPrefix + std::to_string(getpid()) + "-XXXXXX")).string();
  if (ec || mkdtemp(tmpl.data()) == nullptr) {  // mkdtemp makes it 0700
    return absl::UnavailableError("cannot create a private directory for the TLS files: " +
                                  std::string(std::strerror(errno)));
  }
  r->dir_ = tmpl;
  r->staged_.cert = r->staged_.key = r->dir_ + "/identity.pem";
  if (!r->files_.client_ca.empty()) r->staged_.client_ca = r->dir_ + "/client-ca.pem";
  r->last_ = TlsFilesFingerprint(r->files_);
  if (absl::Status s = r->Stage(); !s.ok()) return s;
  r->credentials_ = MakeTlsServerCredentials(r->staged_);
  r->thread_ = std::thread([p = r.get()] { p->Run(); });
  return r;
}

TlsReloader::~TlsReloader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // gRPC's watcher may still hold the last version it read; the files are not needed.
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

absl::Status TlsReloader::Stage() const {
  // Checked in memory, then written: gRPC never gets bytes that were not checked, even
  // if the files change again meanwhile (the next poll sees that).
  absl::StatusOr<TlsPem> pem = ReadTlsFiles(files_);
  if (!pem.ok()) return pem.status();
  // Key first: gRPC reads the private key and the chain from the same file, each
  // skipping the other's PEM blocks.
  std::string identity = pem->key;
  if (identity.back() != '\n') identity += '\n';
  if (absl::Status s = WriteAtomically(staged_.key, identity + pem->cert); !s.ok()) return s;
  if (files_.client_ca.empty()) return absl::OkStatus();
  return WriteAtomically(staged_.client_ca, pem->client_ca);
}

void TlsReloader::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, poll_, [this] { return stop_; })) {
    const std::string now = TlsFilesFingerprint(files_);
    if (now == last_) continue;
    last_ = now;
    absl::Status s = Stage();
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
