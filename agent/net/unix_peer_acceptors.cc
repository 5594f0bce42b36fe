#include "agent/net/unix_peer_acceptors.h"

#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/security/server_credentials.h>

namespace kspool::agent {
namespace {

class SlotProcessor final : public grpc::AuthMetadataProcessor {
 public:
  SlotProcessor(std::shared_ptr<const UnixPeerSlots> slots, size_t slot)
      : slots_(std::move(slots)), slot_(slot) {}
  // Runs inline on the call's thread: it only reads a small table.
  bool IsBlocking() const override { return false; }
  // gRPC hands every call the auth context of its connection, shared by the calls on
  // it, not a copy: the identities are added once, by the connection's first call, under
  // the lock, so that no call reads the context while another changes it (its later
  // calls, and their readers, come after that first call and only read).
  grpc::Status Process(const InputMetadata&, grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    MutexLock l(&mu_);
    if (!context->FindPropertyValues(kUnixPeerProperty).empty()) return grpc::Status::OK;
    const std::optional<UnixPeer> peer = slots_->Holder(slot_);
    // A call arrives on an open connection, whose slot is held: a free slot would be a
    // bug, and a call must never run as nobody-knows-who.
    if (!peer) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unix peer unknown");
    for (const std::string& id : UnixPeerIdentities(*peer)) {
      context->AddProperty(kUnixPeerProperty, id);
    }
    return grpc::Status::OK;
  }

 private:
  const std::shared_ptr<const UnixPeerSlots> slots_;
  const size_t slot_;
  Mutex mu_;  // serializes the processing of this slot's calls (see Process)
};

}  // namespace

std::vector<std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor>> AddUnixPeerAcceptors(
    grpc::ServerBuilder* builder, std::shared_ptr<const UnixPeerSlots> slots) {
  std::vector<std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor>> out;
  for (size_t i = 0; i < slots->size(); ++i) {
    std::shared_ptr<grpc::ServerCredentials> creds =
        grpc::experimental::LocalServerCredentials(UDS);
    creds->SetAuthMetadataProcessor(std::make_shared<SlotProcessor>(slots, i));
    out.push_back(builder->experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, creds));
  }
  return out;
}

}  // namespace kspool::agent
