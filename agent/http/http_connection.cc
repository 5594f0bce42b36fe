#include "agent/http/http_connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "agent/http/http_request.h"

namespace kspool::agent {

HttpConnection::HttpConnection(int fd, SSL* ssl, Clock::time_point now,
                               Clock::duration head_timeout)
    : fd_(fd), ssl_(ssl), since_(now), deadline_(now + head_timeout) {}

HttpConnection::~HttpConnection() {
  if (ssl_ != nullptr) {
    // close_notify, best effort and without waiting for the client's: the response
    // is complete by its Content-Length either way.
    if (!aborted_ && SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    SSL_free(ssl_);
    ERR_clear_error();
  }
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
    const long n = Recv(in_.data() + old, in_.size() - old);
    in_.resize(old + static_cast<size_t>(n > 0 ? n : 0));
    if (n < 0) break;
    if (n == 0) {  // end of stream or an error: nothing more will come
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
    const long n = Send(out_.data() + sent_, out_.size() - sent_);
    if (n < 0) return WriteResult::kPending;
    if (n == 0) return WriteResult::kClosed;
    sent_ += static_cast<size_t>(n);
  }
  return WriteResult::kDone;
}

long HttpConnection::Recv(char* data, size_t size) {
  if (ssl_ != nullptr) return SslResult(SSL_read(ssl_, data, static_cast<int>(size)));
  while (true) {
    const ssize_t n = recv(fd_, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    wants_write_ = false;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    return n > 0 ? n : 0;
  }
}

long HttpConnection::Send(const char* data, size_t size) {
  if (ssl_ != nullptr) return SslResult(SSL_write(ssl_, data, static_cast<int>(size)));
  while (true) {
    const ssize_t n = send(fd_, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    wants_write_ = true;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    return n > 0 ? n : 0;
  }
}

long HttpConnection::SslResult(int n) {
  if (n > 0) return n;
  switch (SSL_get_error(ssl_, n)) {
    case SSL_ERROR_WANT_READ:
      wants_write_ = false;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wants_write_ = true;
      return -1;
    default:  // closed, a failed handshake (a client that does not trust us), an error
      ERR_clear_error();
      return 0;
  }
}

void HttpConnection::Abort() {
  aborted_ = true;
  linger l{1, 0};
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

}  // namespace kspool::agent
