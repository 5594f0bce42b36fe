// ClientChannelCredentials: the gRPC channel credentials kspoolctl and kspool-bench use
// to talk to an agent: plaintext when neither a CA nor a client certificate is given,
// else TLS (an empty CA: gRPC's default roots), with the client certificate and key for
// an agent that requires them (--tls-client-ca, mTLS).
// The callers check that the files exist when parsing their flags; a file that cannot be
// read here reads as empty, which gRPC then refuses at the handshake.
// Thread safety: stateless.
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

namespace kspool::tools {

std::shared_ptr<grpc::ChannelCredentials> ClientChannelCredentials(const std::string& ca,
                                                                   const std::string& cert,
                                                                   const std::string& key);

}  // namespace kspool::tools
