// ReceptionMeter's accounting over long runs, on simulated sockets (the probe and the
// clock are the test's): hours of an honest client's wire traffic (HTTP/2 and TLS
// framing, pings, flow-control updates) leave no residue and never shut it down, while
// a stalled request keeps its debt and is forgiven no faster than the stated rates.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "agent/net/reception_meter.h"

namespace kspool::agent {
namespace {

struct FakeSocket {
  std::string peer;  // as gRPC names it
  uint64_t inode = 0;
  uint64_t received = 0;
  uint64_t sent = 0;
};

class Accounting : public ::testing::Test {
 protected:
  std::unique_ptr<ReceptionMeter> Meter(uint64_t limit) {
    return std::make_unique<ReceptionMeter>(
        limit, [this](uint64_t debt) { shut_.push_back(debt); }, &clock_,
        [this](int fd, ReceptionMeter::SocketReading* r) {
          auto it = sockets_.find(fd);
          if (it == sockets_.end()) return false;
          r->inode = it->second.inode;
          r->received = it->second.received;
          r->sent = it->second.sent;
          return true;
        },
        [this](int fd) -> std::optional<ConnectionKey> {
          auto it = sockets_.find(fd);
          if (it == sockets_.end()) return std::nullopt;
          return ConnectionKeyOfPeer(it->second.peer);
        });
  }
  FakeSocket& Open(int fd, const std::string& peer) {
    sockets_[fd] = FakeSocket{peer, static_cast<uint64_t>(1000 + fd), 0, 0};
    return sockets_[fd];
  }

  // The bytes an honest gRPC client puts on the wire for a request of `size` bytes
  // over TLS: a HEADERS frame (150 bytes of HPACK: a changing timeout and ~100 bytes of
  // per-request tracing metadata), the 5-byte gRPC prefix, a 9-byte DATA frame header
  // per 16 KiB, and a 29-byte TLS record overhead for the headers and per 16 KiB.
  static uint64_t HonestWire(uint64_t size) {
    const uint64_t chunks = (size + 5 + 16383) / 16384;
    return (9 + 150 + 29) + size + 5 + chunks * (9 + 29);
  }

  ManualClock clock_{0};
  std::map<int, FakeSocket> sockets_;
  std::vector<uint64_t> shut_;
};

TEST_F(Accounting, AClientThatCompletesItsRequestsIsNeverShutDownOverHours) {
  // 2 MiB: two of the largest requests in flight; a residue of a few bytes per request
  // would pass it within minutes.
  auto meter = Meter(2 << 20);
  FakeSocket& sender = Open(5, "ipv6:[::ffff:10.0.0.7]:40001");  // IPv4 on a dual-stack socket
  FakeSocket& watcher = Open(6, "ipv4:10.0.0.8:40002");
  meter->Track(5);
  meter->Track(6);
  // The TLS handshakes (client certificates), once each.
  sender.received += 4096;
  watcher.received += 4096;
  // The watcher's one WatchDeliveries request.
  watcher.received += HonestWire(12);
  meter->Sweep();
  meter->Completed("ipv4:10.0.0.8:40002", 12);

  const uint64_t sizes[] = {60, 1'500, 64 << 10, 990'000, 300, 12'000};
  uint64_t peak = 0;
  const int64_t kSweepMs = 50, kHours = 4;
  for (int64_t t = 0, i = 0; t < kHours * 3600 * 1000; t += kSweepMs, ++i) {
    clock_.Advance(kSweepMs);
    // One request per sweep (20/s, 5 MB/s), received in full before the sweep and
    // credited after it, as a call completes after its last bytes were read.
    const uint64_t size = sizes[i % 6];
    sender.received += HonestWire(size);
    sender.sent += 40;  // its answer
    // The watcher is sent 20 KB/s of outcomes and answers with flow-control updates
    // (stream and connection, 13 bytes each per 32 KiB).
    watcher.sent += 1000;
    if (i % 32 == 0) watcher.received += 26;
    // Once a second the agent pings each (BDP, keepalive): 17-byte acks.
    if (i % 20 == 0) {
      sender.received += 17;
      watcher.received += 17;
      sender.sent += 17;
      watcher.sent += 17;
    }
    meter->Sweep();
    peak = std::max(peak, meter->debt());
    meter->Completed("ipv4:10.0.0.7:40001", size);
  }
  EXPECT_TRUE(shut_.empty()) << shut_.size() << " shut down, the first holding " << shut_[0];
  EXPECT_LE(peak, HonestWire(990'000) + 8192);
  // No residue once the last request is in.
  clock_.Advance(50);
  meter->Sweep();
  EXPECT_EQ(meter->debt(), 0u);
}

TEST_F(Accounting, AStalledRequestKeepsItsDebtForgivenOnlyAtTheStatedRates) {
  auto meter = Meter(1 << 30);
  FakeSocket& s = Open(5, "ipv4:10.0.0.7:40001");
  meter->Track(5);
  s.received += 1'000'000;  // a request that never completes
  meter->Sweep();
  EXPECT_EQ(meter->debt(), 1'000'000u);
  // An hour: 4 bytes a second, and 1/256 of the 256,000 bytes the agent sent it.
  for (int i = 0; i < 3600; ++i) {
    clock_.Advance(1000);
    s.sent += 256'000 / 3600 + (i < 256'000 % 3600 ? 1 : 0);
    meter->Sweep();
  }
  EXPECT_EQ(meter->debt(), 1'000'000u - 3600 * ReceptionMeter::kForgivenBytesPerSecond - 1000);
}

TEST_F(Accounting, OverTheLimitTheStalledConnectionIsShutDownNotTheBusyOne) {
  auto meter = Meter(4 << 20);
  FakeSocket& busy = Open(5, "ipv4:10.0.0.7:40001");
  FakeSocket& stalled = Open(6, "ipv6:[2001:db8::1]:40002");
  meter->Track(5);
  meter->Track(6);
  for (int i = 0; i < 200; ++i) {
    clock_.Advance(50);
    busy.received += HonestWire(990'000);
    if (shut_.empty()) stalled.received += 30'000;  // until its connection is shut down
    meter->Sweep();
    meter->Completed("ipv4:10.0.0.7:40001", 990'000);
  }
  ASSERT_EQ(shut_.size(), 1u);
  EXPECT_GT(shut_[0], 4u << 20);
  EXPECT_EQ(meter->debt(), 0u);  // the busy one owes nothing; the stalled one was reset
}

TEST_F(Accounting, ConnectionsSharingAKeyShareItsCreditAndTheirSumStaysExact) {
  auto meter = Meter(1 << 30);
  // One client address and port towards two of the agent's addresses.
  FakeSocket& a = Open(5, "ipv4:10.0.0.7:40001");
  FakeSocket& b = Open(6, "ipv4:10.0.0.7:40001");
  meter->Track(5);
  meter->Track(6);
  a.received += 100'000;  // completed
  b.received += 50'000;   // still partial
  meter->Sweep();
  meter->Completed("ipv4:10.0.0.7:40001", 100'000);
  meter->Sweep();
  // What is held is 50,000 bytes; the framing credited with the completed request may
  // pay some of it, never more.
  EXPECT_LE(meter->debt(), 50'000u);
  EXPECT_GE(meter->debt(), 50'000u - (ReceptionMeter::Credit(100'000) - 100'000));
  // Once one of them closes, the other alone has the key.
  meter->Untrack(5);
  sockets_.erase(5);
  meter->Completed("ipv4:10.0.0.7:40001", 50'000);
  meter->Sweep();
  EXPECT_EQ(meter->debt(), 0u);
}

TEST_F(Accounting, CreditsForAClosedConnectionGoNowhere) {
  auto meter = Meter(1 << 30);
  FakeSocket& a = Open(5, "ipv4:10.0.0.7:40001");
  meter->Track(5);
  a.received += 10'000;
  meter->Untrack(5);
  meter->Completed("ipv4:10.0.0.7:40001", 10'000);
  // The same address and port connect again (a new socket on the same descriptor).
  FakeSocket& again = Open(5, "ipv4:10.0.0.7:40001");
  again.inode = 9999;
  meter->Track(5);
  again.received += 10'000;
  meter->Sweep();
  EXPECT_EQ(meter->debt(), 10'000u);
}

}  // namespace
}  // namespace kspool::agent
