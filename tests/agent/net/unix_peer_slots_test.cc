// UnixPeerSlots: how unix-socket peers share and release the acceptor slots that carry
// their identity to calls, and how SO_PEERCRED becomes identity strings.
#include "agent/net/unix_peer_slots.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kspool::agent {
namespace {

constexpr UnixPeer kAlice{1000, 1000};
constexpr UnixPeer kBob{1001, 1000};
constexpr UnixPeer kCarol{1002, 50};

TEST(UnixPeerSlots, ConnectionsOfOnePeerShareItsSlot) {
  UnixPeerSlots slots(4);
  const std::optional<size_t> a = slots.Acquire(kAlice);
  ASSERT_TRUE(a);
  EXPECT_EQ(slots.Acquire(kAlice), a);
  EXPECT_EQ(slots.held(), 1u);
  EXPECT_EQ(slots.Holder(*a), kAlice);
}

TEST(UnixPeerSlots, SameUidWithAnotherGidIsAnotherPeer) {
  UnixPeerSlots slots(4);
  const std::optional<size_t> a = slots.Acquire(kAlice);
  const std::optional<size_t> other = slots.Acquire(UnixPeer{kAlice.uid, 7});
  ASSERT_TRUE(a && other);
  EXPECT_NE(*a, *other);
  EXPECT_EQ(slots.Holder(*other), (UnixPeer{kAlice.uid, 7}));
}

TEST(UnixPeerSlots, FullWhenEverySlotIsHeldByOtherPeers) {
  UnixPeerSlots slots(2);
  ASSERT_TRUE(slots.Acquire(kAlice));
  ASSERT_TRUE(slots.Acquire(kBob));
  EXPECT_FALSE(slots.Acquire(kCarol));
  EXPECT_TRUE(slots.Acquire(kBob));  // a peer already in keeps connecting
}

TEST(UnixPeerSlots, ASlotIsFreedOnlyByItsLastConnection) {
  UnixPeerSlots slots(1);
  const std::optional<size_t> a = slots.Acquire(kAlice);
  ASSERT_TRUE(a);
  ASSERT_EQ(slots.Acquire(kAlice), a);
  slots.Release(*a);
  EXPECT_EQ(slots.Holder(*a), kAlice);  // one connection still open
  EXPECT_FALSE(slots.Acquire(kBob));
  slots.Release(*a);
  EXPECT_FALSE(slots.Holder(*a));
  EXPECT_EQ(slots.Acquire(kBob), a);
  EXPECT_EQ(slots.Holder(*a), kBob);
}

TEST(UnixPeerSlots, ReleasingAFreeOrUnknownSlotChangesNothing) {
  UnixPeerSlots slots(2);
  slots.Release(0);
  slots.Release(7);
  const std::optional<size_t> a = slots.Acquire(kAlice);
  ASSERT_TRUE(a);
  slots.Release(1 - *a);
  EXPECT_EQ(slots.Holder(*a), kAlice);
  EXPECT_EQ(slots.held(), 1u);
}

TEST(UnixPeerSlots, NoSlotsMeansNoPeerIsTaken) {
  UnixPeerSlots slots(0);
  EXPECT_FALSE(slots.Acquire(kAlice));
}

TEST(UnixPeerIdentities, AreUidAndGid) {
  EXPECT_EQ(UnixPeerIdentities(kCarol), (std::vector<std::string>{"uid:1002", "gid:50"}));
}

TEST(ReadUnixPeer, GivesTheConnectingProcesssUidAndGid) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  absl::StatusOr<UnixPeer> peer = ReadUnixPeer(fds[0]);
  close(fds[0]);
  close(fds[1]);
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(peer->uid, geteuid());
  EXPECT_EQ(peer->gid, getegid());
}

TEST(ReadUnixPeer, FailsOnANonSocket) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  absl::StatusOr<UnixPeer> peer = ReadUnixPeer(fds[0]);
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(peer.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace kspool::agent
