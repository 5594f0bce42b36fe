#include "agent/security/peer_identity.h"

#include <grpc/grpc_security_constants.h>

#include "agent/net/unix_peer_acceptors.h"

namespace kspool::agent {
namespace {

void AddAll(const grpc::AuthContext& auth, const char* property, const std::string& prefix,
            std::vector<std::string>* out) {
  for (const grpc::string_ref& v : auth.FindPropertyValues(property)) {
    if (v.empty()) continue;
    out->push_back(prefix + std::string(v.data(), v.size()));
  }
}

}  // namespace

std::vector<std::string> PeerIdentities(const grpc::AuthContext* auth) {
  std::vector<std::string> out;
  // gRPC sets these properties only from a client certificate that passed verification
  // (it fails the handshake otherwise), so they can be trusted as they are. A URI gets
  // its prefix too: a certificate's URI SAN may read "cn:admin" or "uid:0".
  if (auth != nullptr) {
    AddAll(*auth, GRPC_X509_CN_PROPERTY_NAME, "cn:", &out);
    AddAll(*auth, GRPC_PEER_DNS_PROPERTY_NAME, "dns:", &out);
    AddAll(*auth, GRPC_PEER_URI_PROPERTY_NAME, "uri:", &out);
    AddAll(*auth, kUnixPeerProperty, "", &out);  // set by the server only (unix_peer_acceptors.h)
  }
  if (out.empty()) out.emplace_back(kAnonymousIdentity);
  return out;
}

std::vector<std::string> PeerIdentities(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return PeerIdentities(auth.get());
}

}  // namespace kspool::agent
