// HttpConnection: one client connection of HttpServer on a non-blocking socket: the request
// head being read, then the response being written, and the deadline of the current state.
// With a TLS session (HttpTls) the same, through OpenSSL; the handshake happens within
// the head's deadline. Used only by the server's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

typedef struct ssl_st SSL;

namespace kspool::agent {

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kReadingHead, kWriting };
  enum class ReadResult { kNeedMore, kHead, kTooLarge, kClosed };
  enum class WriteResult { kPending, kDone, kClosed };

  // Takes `fd` and `ssl` (a TLS session on it, or null for plain HTTP); the request head
  // is due by `now + head_timeout`.
  HttpConnection(int fd, SSL* ssl, Clock::time_point now, Clock::duration head_timeout);
  // Discards unread input (bounded) so that closing sends FIN, not a reset that could
  // destroy a response the client has not read yet; then closes the socket.
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd() const { return fd_; }
  // What the connection waits for to go on: the socket writable (true) or readable. TLS
  // can need either in either state (a handshake write while reading the head).
  bool wants_write() const { return wants_write_; }
  // The epoll events the server registered for it (the server's bookkeeping).
  uint32_t watched = 0;
  // Its peer's address is a loopback one (IsLoopbackPeer), set by the server at accept.
  bool loopback_peer = false;
  State state() const { return state_; }
  // When the current state began and when it must be over.
  Clock::time_point since() const { return since_; }
  Clock::time_point deadline() const { return deadline_; }

  // Reads what has arrived, keeping at most `max_head_bytes` + 1 bytes. kHead once a whole
  // head of at most `max_head_bytes` is in head(); kClosed if the client left without one.
  ReadResult Read(size_t max_head_bytes);
  std::string_view head() const { return std::string_view(in_).substr(0, head_length_); }

  // Switches to writing `response`, due by `now + write_timeout`, and writes what the socket
  // takes right away.
  WriteResult Respond(std::string response, Clock::time_point now, Clock::duration write_timeout);
  // Writes more of the response; kDone when all of it is sent.
  WriteResult Write();

  // Makes the close a reset that discards unsent output at once: for a client dropped for
  // not reading, whose output would otherwise linger in the kernel's buffers.
  void Abort();

 private:
  // >0: bytes moved; 0: the peer closed or failed; -1: again when wants_write() says.
  long Recv(char* data, size_t size);
  long Send(const char* data, size_t size);
  long SslResult(int n);

  int fd_;
  SSL* ssl_;
  bool wants_write_ = false;
  bool aborted_ = false;
  State state_ = State::kReadingHead;
  Clock::time_point since_;
  Clock::time_point deadline_;
  std::string in_;
  size_t head_length_ = 0;
  std::string out_;
  size_t sent_ = 0;
};

}  // namespace kspool::agent
