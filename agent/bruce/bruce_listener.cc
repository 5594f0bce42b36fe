#include "agent/bruce/bruce_listener.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace kspool::agent {
namespace {

constexpr int kDatagramsPerCall = 32;      // recvmmsg batch
constexpr int kDatagramCallsPerRound = 8;  // then other sockets get their turn
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kStreamBytesPerRound = 256 << 10;
constexpr int kIdleFlushMs = 100;  // retries of a refused batch need a Flush() now and then

}  // namespace

BruceListener::BruceListener(BruceListenerOptions options, BruceIngest* ingest,
                             BruceRejections* rejections, Metrics* metrics)
    : options_(std::move(options)), ingest_(ingest), rejections_(rejections), metrics_(metrics) {}

absl::StatusOr<std::unique_ptr<BruceListener>> BruceListener::Listen(BruceListenerOptions options,
                                                                     BruceIngest* ingest,
                                                                     BruceRejections* rejections,
                                                                     Metrics* metrics) {
  std::unique_ptr<BruceListener> l(
      new BruceListener(std::move(options), ingest, rejections, metrics));
  const BruceListenerOptions& o = l->options_;
  l->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  l->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  // Shared with the ingest's callback, which may outlive this listener by an append.
  l->wake_owner_ = std::shared_ptr<int>(new int(l->wake_fd_), [](int* fd) {
    if (*fd >= 0) close(*fd);
    delete fd;
  });
  if (l->epoll_fd_ < 0 || l->wake_fd_ < 0) {
    return absl::UnavailableError("bruce input: cannot create an epoll or event descriptor");
  }
  l->Watch(l->wake_fd_);
  ingest->set_on_room([wake = l->wake_owner_] {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(*wake, &one, sizeof one);
  });
  if (!o.datagram_path.empty()) {
    absl::StatusOr<int> fd = BindBruceDatagram(o.datagram_path, o.socket);
    if (!fd.ok()) return fd.status();
    l->datagram_fd_ = *fd;
    l->Watch(*fd);
    // At most 4 MiB of receive buffers, however large the limit.
    l->datagram_batch_ = static_cast<int>(std::clamp<size_t>(
        (4 << 20) / std::max<size_t>(o.max_datagram_bytes, 1), 1, kDatagramsPerCall));
    l->datagrams_.resize(l->datagram_batch_ * o.max_datagram_bytes);
  }
  if (!o.stream_path.empty()) {
    absl::StatusOr<int> fd = BindBruceStream(o.stream_path, o.socket);
    if (!fd.ok()) return fd.status();
    l->stream_fd_ = *fd;
    l->Watch(*fd);
  }
  if (!o.tcp_address.empty()) {
    absl::StatusOr<std::vector<int>> fds = BindBruceTcp(o.tcp_address, &l->tcp_bound_);
    if (!fds.ok()) return fds.status();
    l->tcp_fds_ = *fds;
    for (int fd : l->tcp_fds_) l->Watch(fd);
  }
  return l;
}

BruceListener::~BruceListener() {
  Stop();
  for (auto& [fd, c] : connections_) close(fd);
  for (int fd : tcp_fds_) close(fd);
  for (int fd : {datagram_fd_, stream_fd_, epoll_fd_}) {
    if (fd >= 0) close(fd);
  }
  if (datagram_fd_ >= 0) unlink(options_.datagram_path.c_str());
  if (stream_fd_ >= 0) unlink(options_.stream_path.c_str());
}

void BruceListener::Watch(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
}

void BruceListener::Start() {
  thread_ = std::thread([this] { Run(); });
}

void BruceListener::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  ingest_->Stop();  // a Flush() blocked for room returns
  thread_.join();
}

void BruceListener::Run() {
  pthread_setname_np(pthread_self(), "kspool-bruce");
  epoll_event events[64];
  while (!stop_) {
    // While appends are in the WAL's hands, messages gather in the batch (group commit
    // grows with the load); when the sockets are idle and the WAL has room, the batch
    // goes. An append that finishes wakes this loop (wake_fd_).
    const bool flush_soon = ingest_->has_batch() && ingest_->HasRoom();
    const int n = epoll_wait(epoll_fd_, events, 64, flush_soon ? 0 : kIdleFlushMs);
    bool read = false;
    for (int i = 0; i < n && !stop_; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t count;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &count, sizeof count);
        continue;
      }
      read = true;
      if (fd == datagram_fd_) {
        ReadDatagrams();
      } else if (fd == stream_fd_) {
        AcceptConnections(fd, BruceTransport::kStream);
      } else if (std::find(tcp_fds_.begin(), tcp_fds_.end(), fd) != tcp_fds_.end()) {
        AcceptConnections(fd, BruceTransport::kTcp);
      } else {
        ReadConnection(fd);
      }
    }
    // Nothing more to read right now: what was read goes to the WAL, if it has room (or
    // after the idle timeout: then Flush() waits, and retries what the WAL refused).
    // And while the load goes on, the disk is kept busy: an idle WAL gets the batch at once.
    if ((!read && (ingest_->HasRoom() || n == 0)) || (ingest_->has_batch() && ingest_->WalIdle())) {
      ingest_->Flush();
    }
  }
  ingest_->Flush();  // what was read before the stop is appended too
}

void BruceListener::ReadDatagrams() {
  const size_t max = options_.max_datagram_bytes;
  mmsghdr msgs[kDatagramsPerCall];
  iovec iov[kDatagramsPerCall];
  for (int call = 0; call < kDatagramCallsPerRound; ++call) {
    for (int i = 0; i < datagram_batch_; ++i) {
      iov[i] = {datagrams_.data() + i * max, max};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int got = recvmmsg(datagram_fd_, msgs, datagram_batch_, MSG_DONTWAIT, nullptr);
    if (got <= 0) return;  // EAGAIN (or an error the next round sees again)
    for (int i = 0; i < got; ++i) {
      std::string_view bytes(datagrams_.data() + i * max, msgs[i].msg_len);
      if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
        rejections_->Record(
            BruceReject::kTooLong, "datagram", bytes,
            "datagram larger than --bruce-max-message-bytes " + std::to_string(max));
        continue;
      }
      ingest_->Accept(bytes, BruceTransport::kDatagram, max);
    }
    if (got < datagram_batch_) return;
  }
}

void BruceListener::AcceptConnections(int listen_fd, BruceTransport transport) {
  for (int i = 0; i < 64; ++i) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (connections_.size() >= options_.max_connections) {
      close(fd);
      if (metrics_) metrics_->Degraded("bruce_connection_limit");
      uint64_t suppressed = 0;
      if (log_.Admit(SystemClock::Default()->MonotonicMillis(), &suppressed)) {
        spdlog::warn(
            "bruce input: {} connections open; closed a new one ({} more since the "
            "last warning)",
            connections_.size(), suppressed);
      }
      continue;
    }
    connections_[fd] = Connection{transport, {}, 0, 0};
    Watch(fd);
  }
}

void BruceListener::CloseConnection(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  buffered_ -= it->second.counted;
  connections_.erase(it);
}

void BruceListener::Account(Connection& c) {
  if (c.start == c.buffer.size()) {  // nothing unfinished: hold no memory
    std::string().swap(c.buffer);
    c.start = 0;
  }
  buffered_ = buffered_ - c.counted + c.buffer.capacity();
  c.counted = c.buffer.capacity();
  if (buffered_ <= options_.max_buffered_bytes) return;
  // Over the bound: the connection holding the most unfinished bytes goes.
  auto largest = std::max_element(
      connections_.begin(), connections_.end(),
      [](const auto& a, const auto& b) { return a.second.counted < b.second.counted; });
  const size_t held = largest->second.counted;
  if (metrics_) metrics_->Degraded("bruce_stream_memory");
  uint64_t suppressed = 0;
  if (log_.Admit(SystemClock::Default()->MonotonicMillis(), &suppressed)) {
    spdlog::warn(
        "bruce input: stream clients hold {} bytes of unfinished messages, over {}; "
        "closed the connection holding {} ({} more since the last warning)",
        buffered_, options_.max_buffered_bytes, held, suppressed);
  }
  CloseConnection(largest->first);
}

void BruceListener::ReadConnection(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  const std::string_view tname = BruceTransportName(c.transport);
  const size_t max = options_.max_stream_bytes;
  size_t budget = kStreamBytesPerRound;
  while (budget > 0) {
    const size_t have = c.buffer.size();
    c.buffer.resize(have + kReadChunk);
    const ssize_t got = read(fd, c.buffer.data() + have, kReadChunk);
    c.buffer.resize(have + std::max<ssize_t>(got, 0));
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (got == 0 || got < 0) {
      const std::string_view rest = std::string_view(c.buffer).substr(c.start);
      if (!rest.empty()) {
        rejections_->Record(
            BruceReject::kUncleanDisconnect, tname, rest,
            "the connection ended " + std::to_string(rest.size()) + " bytes into a message");
      }
      CloseConnection(fd);
      return;
    }
    budget -= std::min<size_t>(budget, static_cast<size_t>(got));
    // Every whole message in the buffer.
    while (c.buffer.size() - c.start >= 4) {
      const std::string_view rest = std::string_view(c.buffer).substr(c.start);
      absl::StatusOr<size_t> size = BruceFrameSize(rest, max);
      if (!size.ok()) {
        rejections_->Record(BruceRejectReason(size.status()), tname, rest,
                            std::string(size.status().message()) + "; connection closed");
        CloseConnection(fd);
        return;
      }
      if (rest.size() < *size) break;
      ingest_->Accept(rest.substr(0, *size), c.transport, max);
      c.start += *size;
    }
    if (c.start > 0 && (c.start == c.buffer.size() || c.start >= kReadChunk)) {
      c.buffer.erase(0, c.start);
      c.start = 0;
    }
  }
  Account(c);  // may close this connection: `c` is not used after it
}

}  // namespace kspool::agent
