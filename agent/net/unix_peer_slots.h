// UnixPeerSlots: who is connected on the gRPC unix socket, as a fixed number of slots
// (one gRPC acceptor each, agent/net/unix_peer_acceptors.h), each held by one (uid, gid)
// from SO_PEERCRED for as long as that peer has a connection in it. gRPC 1.51 gives a
// call neither its connection's descriptor nor its credentials, but it does tell which
// acceptor the connection came through: that is how a call learns its peer.
// Guarantees: a slot holds one peer at a time and is never given to another while a
// connection of its peer is open (the caller releases a connection only once its
// descriptor is closed); connections of the same peer share its slot.
// Thread safety: all methods may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/mutex.h"

namespace kspool::agent {

struct UnixPeer {
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const UnixPeer& o) const { return uid == o.uid && gid == o.gid; }
};

// The connecting process's effective uid and gid (SO_PEERCRED) of a connected unix
// socket; INTERNAL with the reason when the kernel does not say.
[[nodiscard]] absl::StatusOr<UnixPeer> ReadUnixPeer(int fd);

// "uid:N", "gid:N": the identities access rules name a unix-socket peer by.
std::vector<std::string> UnixPeerIdentities(const UnixPeer& peer);

// 256 peers at once cost about 1.3 MB of gRPC server state and no threads.
inline constexpr size_t kDefaultUnixPeerSlots = 256;

class UnixPeerSlots {
 public:
  explicit UnixPeerSlots(size_t slots);
  size_t size() const { return slots_size_; }

  // The slot for one more connection of `peer`: the one it already holds, else a free
  // one; nullopt when every slot is held by other peers.
  std::optional<size_t> Acquire(const UnixPeer& peer);
  // One connection taken by Acquire(slot) is closed; the last frees the slot.
  void Release(size_t slot);
  // The peer holding `slot`, nullopt when it is free.
  std::optional<UnixPeer> Holder(size_t slot) const;
  // Slots held (for tests and status).
  size_t held() const;

 private:
  struct Slot {
    UnixPeer peer;
    uint64_t connections = 0;  // 0: free
  };
  const size_t slots_size_;
  mutable Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kspool::agent
