// The gRPC side of UnixPeerSlots: one external connection acceptor per slot, so that a
// call knows its unix-socket peer (docs/SECURITY.md, "TLS", Identities). Each acceptor has its own
// credentials, LocalServerCredentials(UDS): plaintext (its handshake exchanges no bytes,
// so every plaintext client connects as before), with an AuthMetadataProcessor that
// gives each connection through slot i the identities of the peer holding i, read at
// its first call (a slot changes hands only after its peer's connections are closed).
// Thread safety: AddUnixPeerAcceptors once, before the server is built; the processors
// run on gRPC's threads and only read the slots.
#pragma once

#include <grpcpp/server_builder.h>

#include <memory>
#include <vector>

#include "agent/net/unix_peer_slots.h"

namespace kspool::agent {

// The auth-context property that carries a unix-socket caller's identities ("uid:N",
// "gid:N"); set by the server only, a client cannot send it.
inline constexpr char kUnixPeerProperty[] = "kspool.unix_peer";

// Adds slots->size() acceptors to `builder`; the i-th is slot i's.
std::vector<std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor>> AddUnixPeerAcceptors(
    grpc::ServerBuilder* builder, std::shared_ptr<const UnixPeerSlots> slots);

}  // namespace kspool::agent
