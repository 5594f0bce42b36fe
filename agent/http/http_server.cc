#include "agent/http/http_server.h"

#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "agent/http/http_connection.h"
#include "agent/http/http_drop_log.h"
#include "agent/http/http_request.h"

namespace kspool::agent {
namespace {

using Clock = HttpConnection::Clock;
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;  // connection ids start above these
// After accept() fails for want of descriptors or memory, the listening socket stays
// readable; stop polling it this long instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

absl::StatusOr<int> Bind(const std::string& listen, std::string host, const std::string& port) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int e = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res)) {
    return absl::UnavailableError("cannot serve HTTP on " + listen + ": " + gai_strerror(e));
  }
  std::string error = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;  // SO_REUSEADDR only skips TIME_WAIT; Linux still refuses a second listener
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
        bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      freeaddrinfo(res);
      return fd;
    }
    error = std::strerror(errno);
    if (fd >= 0) close(fd);
  }
  freeaddrinfo(res);
  return absl::UnavailableError("cannot serve HTTP on " + listen + ": " + error);
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

struct HttpServer::Impl {
  HttpHandlers handlers;
  HttpLimits limits;
  int listen_fd = -1;
  int wake_fd = -1;
  int epoll_fd = -1;
  std::thread thread;
  // Everything below is used only by `thread`. Ids grow, so the map is in accept order and
  // an event for a connection closed earlier in the same batch finds nothing.
  std::map<uint64_t, std::unique_ptr<HttpConnection>> conns;
  uint64_t next_id = kWakeId + 1;
  Clock::time_point accept_paused_until{};
  HttpDropLog drop_log;
  std::unique_ptr<HttpTls> tls;  // null: plain HTTP

  ~Impl() {
    for (int fd : {listen_fd, wake_fd, epoll_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  void Watch(int op, int fd, uint32_t events, uint64_t id) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    epoll_ctl(epoll_fd, op, fd, &ev);
  }

  // Closes a connection that kept the server waiting too long.
  void Drop(std::map<uint64_t, std::unique_ptr<HttpConnection>>::iterator it, const char* reason,
            Clock::time_point now) {
    if (it->second->state() == HttpConnection::State::kWriting) it->second->Abort();
    conns.erase(it);
    Report(reason, now);
  }

  void Report(const char* reason, Clock::time_point now) {
    if (handlers.on_drop) handlers.on_drop(reason);
    drop_log.Count(reason, now);
  }

  // Waits for what the connection needs next: writable, or readable (TLS may need
  // either in either state).
  void Rewatch(uint64_t id, HttpConnection& c) {
    const uint32_t events = c.wants_write() ? EPOLLOUT : EPOLLIN | EPOLLRDHUP;
    if (events == c.watched) return;
    Watch(EPOLL_CTL_MOD, c.fd(), events, id);
    c.watched = events;
  }

  void Finish(uint64_t id, HttpConnection& c, HttpConnection::WriteResult w) {
    if (w != HttpConnection::WriteResult::kPending) {
      conns.erase(id);  // the response is sent (or the client left): Connection: close
    } else {
      Rewatch(id, c);
    }
  }

  void OnEvent(uint64_t id, Clock::time_point now) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    HttpConnection& c = *it->second;
    if (c.state() == HttpConnection::State::kWriting) return Finish(id, c, c.Write());
    using R = HttpConnection::ReadResult;
    switch (c.Read(limits.max_head_bytes)) {
      case R::kNeedMore: return Rewatch(id, c);
      case R::kClosed: conns.erase(it); return;
      case R::kHead:
        return Finish(id, c,
                      c.Respond(Respond(handlers, c.head(), c.loopback_peer), now,
                                limits.write_timeout));
      case R::kTooLarge: {
        auto w = c.Respond(RenderResponse(431, "text/plain", "request head too large\n"), now,
                           limits.write_timeout);
        Finish(id, c, w);
        return Report("head_too_large", now);
      }
    }
  }

  void Accept(Clock::time_point now) {
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof(peer);
      int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        Report("accept_failed", now);  // out of descriptors or memory
        accept_paused_until = now + kAcceptPause;
        Watch(EPOLL_CTL_MOD, listen_fd, 0, kListenId);
        return;
      }
      if (conns.size() >= limits.max_connections) {
        auto oldest = std::min_element(conns.begin(), conns.end(), [](const auto& a, const auto& b) {
          return a.second->since() < b.second->since();
        });
        Drop(oldest, "evicted", now);
      }
      SSL* ssl = nullptr;
      if (tls) {
        ssl = tls->NewSession(fd, now);
        if (ssl == nullptr) {
          close(fd);
          Report("accept_failed", now);  // OpenSSL out of memory
          continue;
        }
      }
      const uint64_t id = next_id++;
      auto c = std::make_unique<HttpConnection>(fd, ssl, now, limits.head_timeout);
      c->watched = EPOLLIN | EPOLLRDHUP;
      c->loopback_peer = IsLoopbackPeer(reinterpret_cast<const sockaddr*>(&peer));
      Watch(EPOLL_CTL_ADD, fd, c->watched, id);
      conns.emplace(id, std::move(c));
    }
  }

  // Drops the connections past their deadline; returns how long epoll may wait.
  int Expire(Clock::time_point now) {
    Clock::time_point next = now + std::chrono::seconds(1);
    for (auto it = conns.begin(); it != conns.end();) {
      const HttpConnection& c = *it->second;
      if (c.deadline() > now) {
        next = std::min(next, c.deadline());
        ++it;
        continue;
      }
      const bool writing = c.state() == HttpConnection::State::kWriting;
      Drop(it++, writing ? "write_timeout" : "head_timeout", now);
    }
    if (accept_paused_until != Clock::time_point{}) {
      if (accept_paused_until <= now) {
        accept_paused_until = {};
        Watch(EPOLL_CTL_MOD, listen_fd, EPOLLIN, kListenId);
      } else {
        next = std::min(next, accept_paused_until);
      }
    }
    drop_log.Flush(now);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(wait) + 1;
  }

  void Run() {
    epoll_event events[64];
    int timeout_ms = 0;
    while (true) {
      int n = epoll_wait(epoll_fd, events, 64, timeout_ms);
      const Clock::time_point now = Clock::now();
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kWakeId) return drop_log.Flush(now, /*force=*/true);
        if (id == kListenId) {
          Accept(now);
        } else {
          OnEvent(id, now);
        }
      }
      timeout_ms = Expire(now);
    }
  }
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                              HttpHandlers handlers,
                                                              HttpLimits limits,
                                                              std::unique_ptr<HttpTls> tls) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError("--metrics-listen '" + listen + "' is not HOST:PORT");
  }
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->impl_ = std::make_unique<Impl>();
  Impl& impl = *s->impl_;
  absl::StatusOr<int> fd = Bind(listen, listen.substr(0, colon), listen.substr(colon + 1));
  if (!fd.ok()) return fd.status();
  impl.listen_fd = *fd;
  impl.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  impl.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (impl.wake_fd < 0 || impl.epoll_fd < 0) {
    return absl::UnavailableError("cannot serve HTTP on " + listen + ": " + std::strerror(errno));
  }
  impl.handlers = std::move(handlers);
  impl.tls = std::move(tls);
  impl.limits = limits;
  impl.limits.max_connections = std::max<size_t>(1, limits.max_connections);
  impl.drop_log.SetLimits(limits);
  impl.Watch(EPOLL_CTL_ADD, impl.listen_fd, EPOLLIN, kListenId);
  impl.Watch(EPOLL_CTL_ADD, impl.wake_fd, EPOLLIN, kWakeId);
  impl.thread = std::thread([&impl] { impl.Run(); });
  s->address_ = listen.substr(0, colon) + ":" + std::to_string(BoundPort(impl.listen_fd));
  return s;
}

HttpServer::~HttpServer() {
  if (impl_ && impl_->thread.joinable()) {
    uint64_t one = 1;
    (void)!write(impl_->wake_fd, &one, sizeof(one));
    impl_->thread.join();
  }
}

}  // namespace kspool::agent
