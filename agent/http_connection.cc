#include "agent/http_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "agent/http_request.h"

namespace kspool::agent {

HttpConnection::HttpConnection(int fd, Clock::time_point now, Clock::duration head_timeout)
    : fd_(fd), since_(now), deadline_(now + head_timeout) {}

HttpConnection::~HttpConnection() {
  char buf[4096];
  for (int i = 0; i < 16 && recv(fd_, buf, sizeof(buf), MSG_DONTWAIT) > 0; ++i) {
  }
  close(fd_);
}

HttpConnection::ReadResult HttpConnection::Read(size_t max_head_bytes) {
  bool eof = false;
  while (in_.size() <= max_head_bytes) {
    const size_t old = in_.size();
    in_.resize(max_head_bytes + 1);
    ssize_t n = recv(fd_, in_.data() + old, in_.size() - old, 0);
    in_.resize(old + static_cast<size_t>(n > 0 ? n : 0));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // end of stream or an error: nothing more will come
      eof = true;
      break;
    }
  }
  head_length_ = HeadLength(in_);
  if (head_length_ > max_head_bytes) head_length_ = 0;
  if (head_length_ > 0) return ReadResult::kHead;
  if (in_.size() > max_head_bytes) return ReadResult::kTooLarge;
  return eof ? ReadResult::kClosed : ReadResult::kNeedMore;
}

HttpConnection::WriteResult HttpConnection::Respond(std::string response, Clock::time_point now,
                                                    Clock::duration write_timeout) {
  state_ = State::kWriting;
  since_ = now;
  deadline_ = now + write_timeout;
  out_ = std::move(response);
  sent_ = 0;
  return Write();
}

HttpConnection::WriteResult HttpConnection::Write() {
  while (sent_ < out_.size()) {
    ssize_t n = send(fd_, out_.data() + sent_, out_.size() - sent_, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return WriteResult::kPending;
    if (n <= 0) return WriteResult::kClosed;
    sent_ += static_cast<size_t>(n);
  }
  return WriteResult::kDone;
}

void HttpConnection::Abort() {
  linger l{1, 0};
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

}  // namespace kspool::agent
