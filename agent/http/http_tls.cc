#include "agent/http/http_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

namespace kspool::agent {
namespace {
constexpr TlsFlagNames kFlags{"--metrics-tls-cert", "--metrics-tls-key", ""};
constexpr auto kCheckEvery = std::chrono::seconds(1);
}  // namespace

HttpTls::HttpTls(TlsFiles files, std::function<void()> on_failed)
    : files_(std::move(files)), on_failed_(std::move(on_failed)) {}

HttpTls::~HttpTls() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::unique_ptr<HttpTls>> HttpTls::Load(TlsFiles files,
                                                       std::function<void()> on_failed) {
  std::unique_ptr<HttpTls> t(new HttpTls(std::move(files), std::move(on_failed)));
  t->fingerprint_ = TlsFilesFingerprint(t->files_);
  absl::StatusOr<SSL_CTX*> ctx = t->MakeContext();
  if (!ctx.ok()) return ctx.status();
  t->ctx_ = *ctx;
  return t;
}

absl::StatusOr<SSL_CTX*> HttpTls::MakeContext() const {
  // Checked first for errors that name the flag and say what is wrong; OpenSSL's own
  // loading below then only fails if the files changed in between.
  if (absl::Status s = CheckTlsFiles(files_, kFlags); !s.ok()) return s;
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError("OpenSSL: cannot make a TLS context");
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // No session cache or tickets: every response closes its connection, and there is
  // no point in keeping state for clients that may come back.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  // HttpConnection::Write sends what is left after each partial write, from a buffer
  // that may differ from the one of a write that wanted to be retried.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const bool loaded = SSL_CTX_use_certificate_chain_file(ctx, files_.cert.c_str()) == 1 &&
                      SSL_CTX_use_PrivateKey_file(ctx, files_.key.c_str(), SSL_FILETYPE_PEM) == 1 &&
                      SSL_CTX_check_private_key(ctx) == 1;
  if (!loaded) {
    char err[256];
    ERR_error_string_n(ERR_get_error(), err, sizeof err);
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return absl::InvalidArgumentError(std::string(kFlags.cert) + " " + files_.cert + ": " + err);
  }
  return ctx;
}

void HttpTls::ReloadIfChanged(Clock::time_point now) {
  if (now - checked_ < kCheckEvery) return;
  checked_ = now;
  std::string fingerprint = TlsFilesFingerprint(files_);
  if (fingerprint == fingerprint_) return;
  fingerprint_ = std::move(fingerprint);
  absl::StatusOr<SSL_CTX*> ctx = MakeContext();
  if (!ctx.ok()) {
    spdlog::warn(
        "metrics TLS files changed but cannot be used ({}); still serving the "
        "previous certificate",
        std::string(ctx.status().message()));
    if (on_failed_) on_failed_();
    return;
  }
  SSL_CTX_free(ctx_);  // sessions made from it hold references of their own
  ctx_ = *ctx;
  spdlog::info("metrics TLS files reloaded: new connections get the certificate of {}",
               files_.cert);
}

SSL* HttpTls::NewSession(int fd, Clock::time_point now) {
  ReloadIfChanged(now);
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

}  // namespace kspool::agent
