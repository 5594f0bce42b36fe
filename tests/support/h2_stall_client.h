// H2StallClient: a hostile gRPC client speaking raw HTTP/2 over loopback TCP. Each
// connection opens streams that declare a large gRPC message and send only part of it
// (as much as the server's flow-control windows allow, up to a target), then stall
// with the streams open. Used to check what stalled requests can make the agent hold.
// With `message` set, each stream instead sends that gRPC message whole, over and over
// (a pipelining client of a streaming method). Either way it never opens a window of
// its own: the server can send it 65,535 bytes in all, so it reads no answers.
// Thread safety: one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kspool::testing {

struct H2StallOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  int connections = 1;
  int streams_per_connection = 1;
  std::string path = "/kspool.v1.Spool/Send";
  uint32_t declared_message_bytes = 60'000'000;  // the gRPC length prefix
  uint64_t send_bytes_per_stream = 4'000'000;    // then stall
  // When not empty: a serialized request sent whole `messages_per_stream` times on each
  // stream (declared_message_bytes and send_bytes_per_stream are then unused).
  std::string message;
  int messages_per_stream = 1;
};

class H2StallClient {
 public:
  explicit H2StallClient(H2StallOptions options);
  ~H2StallClient();  // closes every connection

  // Sends until every stream has sent its target or `timeout` passes without the server
  // opening any flow-control window. Returns the message bytes sent in all.
  uint64_t Run(std::chrono::milliseconds timeout);
  // Connections the server has not closed yet (as seen by the last Run()).
  int open_connections() const;
  // DATA bytes the server sent (answers), in all connections.
  uint64_t data_received() const;

 private:
  struct Conn;
  void Drive(Conn& c);
  H2StallOptions options_;
  std::vector<std::unique_ptr<Conn>> conns_;
};

}  // namespace kspool::testing
