// TlsReloader: TLS credentials for the gRPC listener that follow the files of
// --tls-cert, --tls-key and --tls-client-ca as they are replaced (rotation without
// restart: cert-manager and SPIFFE replace them hourly).
//
// Why not point gRPC at the files directly: gRPC 1.51's FileWatcherCertificateProvider
// loads whatever it reads, and when that is unusable (a key that does not match the
// certificate, a rotation seen half done) it drops its working handshaker and every new
// connection fails until the files are fixed. So the reloader checks the files first
// (CheckTlsFiles) and hands gRPC only checked copies, in a private directory (0700,
// removed at shutdown; $TMPDIR/kspool-tls-PID-*, and an agent that starts removes those
// of agents killed without a shutdown) that gRPC's watcher reads every
// kTlsRefreshSeconds:
//  - the key and the certificate chain in ONE file, replaced by one rename, so gRPC can
//    never read a new key with an old certificate;
//  - the client CA in a file of its own.
// Outcomes of a change of the files:
//  - usable: staged; new connections get it within poll period + gRPC's refresh
//    (0.5 s + 1 s); an info line. Connections already open keep their session.
//  - unusable: a warning naming the flag and the reason, `on_failed()` once per change
//    (the agent counts kspool_degraded_events_total{event="tls_reload_failed"}), and
//    the previous certificate keeps being served.
// Thread safety: owns one polling thread; Start and destruction from one thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "agent/security/tls_credentials.h"

namespace kspool::agent {

class TlsReloader {
 public:
  // Checks and stages the files, and starts watching them. Errors: unusable files
  // (naming the flag), or no private directory for the staged copies.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TlsReloader>> Start(
      TlsFiles files, std::function<void()> on_failed,
      std::chrono::milliseconds poll = std::chrono::milliseconds(500));
  ~TlsReloader();  // stops the thread, removes the staged copies
  TlsReloader(const TlsReloader&) = delete;
  TlsReloader& operator=(const TlsReloader&) = delete;

  // For grpc::ServerBuilder; valid as long as the server uses it (gRPC shares it).
  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }

 private:
  TlsReloader(TlsFiles files, std::function<void()> on_failed, std::chrono::milliseconds poll);
  [[nodiscard]] absl::Status Stage() const;  // copies checked files into dir_
  void Run();

  TlsFiles files_;   // the user's files
  TlsFiles staged_;  // the copies gRPC reads (cert == key: one file)
  std::string dir_;
  std::function<void()> on_failed_;
  std::chrono::milliseconds poll_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::string last_;  // fingerprint of the files last checked
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kspool::agent
