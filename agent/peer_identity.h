// PeerIdentity: who is calling, as the strings the access rules will name (issue 14):
//  - from a verified client certificate (mTLS): "cn:<subject CN>", "dns:<SAN DNS name>"
//    for each, and each SAN URI as it is (e.g. "spiffe://prod/ns/orders/sa/api");
//  - "anonymous" for a caller without a client certificate (plaintext TCP, or TLS
//    without --tls-client-ca).
// Unix-socket peers (SO_PEERCRED: "uid:N", "gid:N") are not covered yet: gRPC 1.51 does
// not carry the connection's descriptor or credentials to a call (see README, "TLS").
// Thread safety: stateless functions; the context must outlive the call.
#pragma once

#include <grpcpp/security/auth_context.h>
#include <grpcpp/server_context.h>

#include <string>
#include <vector>

namespace kspool::agent {

inline constexpr char kAnonymousIdentity[] = "anonymous";

// The identities of a call, in a fixed order (CN, DNS names, URIs, as the certificate
// lists them); never empty. `auth` may be null (no security context).
std::vector<std::string> PeerIdentities(const grpc::AuthContext* auth);
std::vector<std::string> PeerIdentities(const grpc::ServerContextBase& context);

}  // namespace kspool::agent
