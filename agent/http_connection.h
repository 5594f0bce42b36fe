// HttpConnection: one client connection of HttpServer on a non-blocking socket: the request
// head being read, then the response being written, and the deadline of the current state.
// Used only by the server's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace kspool::agent {

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;
  enum class State { kReadingHead, kWriting };
  enum class ReadResult { kNeedMore, kHead, kTooLarge, kClosed };
  enum class WriteResult { kPending, kDone, kClosed };

  // Takes `fd`; the request head is due by `now + head_timeout`.
  HttpConnection(int fd, Clock::time_point now, Clock::duration head_timeout);
  // Discards unread input (bounded) so that closing sends FIN, not a reset that could
  // destroy a response the client has not read yet; then closes the socket.
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd() const { return fd_; }
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
  int fd_;
  State state_ = State::kReadingHead;
  Clock::time_point since_;
  Clock::time_point deadline_;
  std::string in_;
  size_t head_length_ = 0;
  std::string out_;
  size_t sent_ = 0;
};

}  // namespace kspool::agent
