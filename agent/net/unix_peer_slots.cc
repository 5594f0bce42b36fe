#include "agent/net/unix_peer_slots.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace kspool::agent {

absl::StatusOr<UnixPeer> ReadUnixPeer(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return absl::InternalError(std::string("SO_PEERCRED: ") + std::strerror(errno));
  }
  if (len != sizeof cred) return absl::InternalError("SO_PEERCRED: short answer");
  return UnixPeer{cred.uid, cred.gid};
}

std::vector<std::string> UnixPeerIdentities(const UnixPeer& peer) {
  return {"uid:" + std::to_string(peer.uid), "gid:" + std::to_string(peer.gid)};
}

UnixPeerSlots::UnixPeerSlots(size_t slots) : slots_size_(slots), slots_(slots) {}

std::optional<size_t> UnixPeerSlots::Acquire(const UnixPeer& peer) {
  MutexLock l(&mu_);
  std::optional<size_t> free;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.connections > 0 && s.peer == peer) {
      ++s.connections;
      return i;
    }
    if (s.connections == 0 && !free) free = i;
  }
  if (!free) return std::nullopt;
  slots_[*free] = Slot{peer, 1};
  return free;
}

void UnixPeerSlots::Release(size_t slot) {
  MutexLock l(&mu_);
  if (slot < slots_.size() && slots_[slot].connections > 0) --slots_[slot].connections;
}

std::optional<UnixPeer> UnixPeerSlots::Holder(size_t slot) const {
  MutexLock l(&mu_);
  if (slot >= slots_.size() || slots_[slot].connections == 0) return std::nullopt;
  return slots_[slot].peer;
}

size_t UnixPeerSlots::held() const {
  MutexLock l(&mu_);
  size_t n = 0;
  for (const Slot& s : slots_) n += s.connections > 0;
  return n;
}

}  // namespace kspool::agent
