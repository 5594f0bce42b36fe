// PeerIdentity: who is calling, as the strings the access rules will name (issue 14):
//  - from a verified client certificate (mTLS): "cn:<subject CN>", "dns:<SAN DNS name>"
//    for each, and "uri:<SAN URI>" for each (e.g. "uri:spiffe://prod/ns/orders/sa/api");
//  - from a plaintext unix-socket peer (SO_PEERCRED at accept): "uid:N", "gid:N" of
//    the connecting process (agent/net/unix_peer_acceptors.h);
//  - "anonymous" for a caller with neither (plaintext TCP, or TLS without
//    --tls-client-ca).
// Every identity starts with its kind (kIdentityKinds, acl_rules.h), so no certificate can name
// another kind's identity: a SAN URI "cn:admin" is "uri:cn:admin", never "cn:admin".
// Thread safety: stateless functions; the context must outlive the call.
#pragma once

#include <grpcpp/security/auth_context.h>
#include <grpcpp/server_context.h>

#include <string>
#include <vector>

namespace kspool::agent {

inline constexpr char kAnonymousIdentity[] = "anonymous";

// The identities of a call, in a fixed order (CN, DNS names, URIs, as the certificate
// lists them; then uid, gid); never empty. `auth` may be null (no security context).
std::vector<std::string> PeerIdentities(const grpc::AuthContext* auth);
std::vector<std::string> PeerIdentities(const grpc::ServerContextBase& context);

}  // namespace kspool::agent
