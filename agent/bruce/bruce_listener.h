// BruceListener: reads Bruce/Dory-format messages from the configured sockets (a UNIX
// datagram socket: one message per datagram; a UNIX stream socket and loopback TCP:
// messages back to back, framed by their Size field) on one thread, and hands each to
// BruceIngest. It never writes to a client. A datagram larger than the limit, a stream
// whose next Size is out of bounds (the connection is closed: it cannot be followed),
// and a stream that ends inside a message are refused and recorded; nothing a client
// sends stops the listener. Reading pauses whenever BruceIngest blocks (flow control):
// a UNIX datagram sender then blocks in the kernel, a stream sender in TCP flow control.
// Thread safety: Start and Stop from one thread. Owns its sockets (and removes the UNIX
// socket files it made); borrows the ingest and the rejection log, which must outlive it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/bruce/bruce_ingest.h"
#include "agent/bruce/bruce_rejections.h"
#include "agent/bruce/bruce_sockets.h"

namespace kspool::agent {

struct BruceListenerOptions {
  std::string datagram_path;  // empty: none
  std::string stream_path;    // empty: none
  std::string tcp_address;    // empty: none
  size_t max_datagram_bytes = kBruceDefaultMaxDatagramBytes;
  size_t max_stream_bytes = kBruceDefaultMaxStreamBytes;
  BruceSocketOptions socket;
  size_t max_connections = 1024;  // stream + TCP clients at once; beyond, closed at once
  // Bytes all stream clients together may hold in unfinished messages; beyond it the
  // connection holding the most is closed (ARCHITECTURE.md invariant 6: memory bounded).
  size_t max_buffered_bytes = 64 << 20;
};

class BruceListener {
 public:
  // Binds every configured socket; nothing is read before Start().
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BruceListener>> Listen(
      BruceListenerOptions options, BruceIngest* ingest, BruceRejections* rejections,
      Metrics* metrics);
  ~BruceListener();  // Stop(), closes the sockets, removes the socket files

  void Start();
  // Stops reading, hands what was read to the WAL (BruceIngest::Flush), joins the thread.
  void Stop();

  // The TCP address bound (port 0 resolved), or "".
  const std::string& tcp_address() const { return tcp_bound_; }

 private:
  struct Connection {
    BruceTransport transport;
    std::string buffer;
    size_t start = 0;    // unparsed bytes begin here
    size_t counted = 0;  // buffer bytes counted in buffered_
  };
  BruceListener(BruceListenerOptions options, BruceIngest* ingest, BruceRejections* rejections,
                Metrics* metrics);
  void Run();
  void ReadDatagrams();
  void AcceptConnections(int listen_fd, BruceTransport transport);
  // Reads what a connection has (up to a budget); closes it at EOF, error or bad framing.
  void ReadConnection(int fd);
  void CloseConnection(int fd);
  // Counts `c`'s buffer in buffered_, and enforces max_buffered_bytes.
  void Account(Connection& c);
  void Watch(int fd);

  const BruceListenerOptions options_;
  BruceIngest* const ingest_;
  BruceRejections* const rejections_;
  Metrics* const metrics_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // owned by wake_owner_
  std::shared_ptr<int> wake_owner_;
  int datagram_fd_ = -1;
  int stream_fd_ = -1;
  std::vector<int> tcp_fds_;
  std::string tcp_bound_;
  std::unordered_map<int, Connection> connections_;  // the thread's
  size_t buffered_ = 0;                              // the thread's
  std::vector<char> datagrams_;                      // receive buffers, the thread's
  int datagram_batch_ = 1;                           // datagrams per recvmmsg
  LogRateLimiter log_{1, 10'000};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kspool::agent
