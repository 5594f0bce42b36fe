// The PEM files of a TLS listener (--tls-cert, --tls-key, --tls-client-ca, and the
// metrics listener's own pair): read them, check that a TLS server can use them, and
// tell one version of them from the next. OpenSSL only (no gRPC), so the config parser
// and its fuzzer can check the flags.
// Thread safety: stateless functions.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kspool::agent {

struct TlsFiles {
  std::string cert;       // --tls-cert: PEM certificate chain, leaf first
  std::string key;        // --tls-key: PEM private key of the leaf
  std::string client_ca;  // --tls-client-ca: PEM CA(s); set = mTLS (client cert required)
  bool enabled() const { return !cert.empty(); }
};

// OK when the files hold what a TLS server can use: a certificate chain, a private key
// that matches its leaf, and (if given) at least one CA certificate. The error names
// the flag and the file, e.g. "--tls-key /x/key.pem: the private key does not match
// the certificate of --tls-cert".
// `flags` names them in errors (the metrics listener has flags of its own).
struct TlsFlagNames {
  const char* cert = "--tls-cert";
  const char* key = "--tls-key";
  const char* client_ca = "--tls-client-ca";
};
[[nodiscard]] absl::Status CheckTlsFiles(const TlsFiles& files, const TlsFlagNames& flags = {});

// The contents of the files, as read once: what is checked is then exactly what is used.
struct TlsPem {
  std::string cert, key, client_ca;
};
// Reads and checks the files as CheckTlsFiles does, and returns what it checked.
[[nodiscard]] absl::StatusOr<TlsPem> ReadTlsFiles(const TlsFiles& files,
                                                  const TlsFlagNames& flags = {});

// What identifies a version of the files (inode, size, modification time of each; a
// missing file is a version too): watchers compare it to see a replacement.
std::string TlsFilesFingerprint(const TlsFiles& files);

// True for addresses only this host can reach: 127.0.0.0/8, ::1, localhost, unix:PATH.
// The agent warns at start when it listens elsewhere without TLS.
bool IsLoopbackAddress(const std::string& listen_address);

}  // namespace kspool::agent
