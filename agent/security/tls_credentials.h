// TLS for the gRPC listener: gRPC server credentials that re-read the PEM files of
// --tls-cert, --tls-key and --tls-client-ca when they change (rotation without restart:
// cert-manager and SPIFFE replace them hourly); the files are checked by tls_files.h.
// The files given to MakeTlsServerCredentials are re-read by gRPC's own
// FileWatcherCertificateProvider; the agent gives it checked copies (agent/security/tls_reloader.h).
// Thread safety: stateless functions.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/security/tls_files.h"

namespace kspool::agent {

// How often the files are re-read: a replaced certificate reaches new connections
// within this (plus the handshake), well inside the 2 s the README promises.
inline constexpr unsigned kTlsRefreshSeconds = 1;

// Credentials for grpc::ServerBuilder (also its external connection acceptor): TLS 1.2+
// with the files re-read every `refresh_seconds`; with a client CA, a client must show a
// certificate signed by it, or the handshake fails. `files.enabled()` must be true.
std::shared_ptr<grpc::ServerCredentials> MakeTlsServerCredentials(
    const TlsFiles& files, unsigned refresh_seconds = kTlsRefreshSeconds);

}  // namespace kspool::agent
