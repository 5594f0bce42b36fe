// TcpClient: raw loopback TCP sockets for tests that play careless or hostile HTTP
// clients (idle, dribbling, never reading). Every wait is bounded by a deadline.
#pragma once

#include <chrono>
#include <string>

namespace kspool::testing {

// A connected TCP socket, closed on destruction.
class TcpClient {
 public:
  // Connects to HOST:PORT ("127.0.0.1:9411", "[::1]:9411"); connected() is false on failure.
  // A non-zero `receive_buffer` sets SO_RCVBUF before connecting (a client that reads slowly).
  explicit TcpClient(const std::string& address, int receive_buffer = 0);
  ~TcpClient();
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `data`; false if the peer has closed or reset the connection.
  bool Send(const std::string& data);
  // Reads until the peer closes (true) or `timeout` passes (false); what arrived is appended
  // to `out` if given.
  bool ReadUntilClosed(std::chrono::milliseconds timeout, std::string* out = nullptr);
  // True if the peer has closed or reset the connection by now (reads and discards what
  // has arrived, without waiting).
  bool PeerClosed() { return ReadUntilClosed(std::chrono::milliseconds(0)); }

 private:
  int fd_ = -1;
};

// Sends `request` on a new connection and returns everything received until the server
// closes it ("" if it could not connect or the server did not close within `timeout`).
std::string Exchange(const std::string& address, const std::string& request,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace kspool::testing
