#include "agent/net/grpc_listener.h"

#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "agent/net/listen_socket.h"
#include "agent/net/unix_peer_acceptors.h"

namespace kspool::agent {
namespace {
// How often the reception meter reads the connections: what a fast client can send
// between two sweeps is the meter's overshoot (loopback: ~100 MB per 100 ms).
constexpr int kSweepMs = 50;
}  // namespace

// The connections handed to gRPC, by descriptor. gRPC closes them without telling us,
// so an entry counts while its descriptor still names the same socket (same inode; a
// socket's inode is not reused while any descriptor refers to it). An entry goes only
// once its socket is closed, so its unix peer slot is released only then.
struct GrpcListener::Tracked {
  struct Id {
    dev_t dev;
    ino_t ino;
    std::optional<size_t> slot;
  };
  Tracked(ReceptionMeter* m, UnixPeerSlots* s) : meter(m), slots(s) {}
  ReceptionMeter* meter;
  UnixPeerSlots* slots;
  std::unordered_map<int, Id> open;
  std::chrono::steady_clock::time_point last_refresh;

  // False when the socket cannot be identified (fstat failed): it must not be handed on.
  bool Add(int fd, std::optional<size_t> slot) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return false;
    open[fd] = Id{st.st_dev, st.st_ino, slot};
    if (meter) meter->Track(fd);
    return true;
  }
  void Closed(const Id& id) {
    if (slots && id.slot) slots->Release(*id.slot);
  }
  void Forget(int fd) {
    auto it = open.find(fd);
    if (it == open.end()) return;
    Closed(it->second);
    open.erase(it);
    if (meter) meter->Untrack(fd);
  }
  void Refresh() {
    for (auto it = open.begin(); it != open.end();) {
      struct stat st {};
      const bool same = fstat(it->first, &st) == 0 && st.st_dev == it->second.dev &&
                        st.st_ino == it->second.ino;
      if (same) {
        ++it;
        continue;
      }
      if (meter) meter->Untrack(it->first);
      Closed(it->second);
      it = open.erase(it);
    }
    last_refresh = std::chrono::steady_clock::now();
  }
};

GrpcListener::GrpcListener(GrpcListenerOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<GrpcListener>> GrpcListener::Listen(GrpcListenerOptions options) {
  absl::StatusOr<ListeningSockets> sockets = BindListeningSockets(options.address);
  if (!sockets.ok()) return sockets.status();
  std::unique_ptr<GrpcListener> l(new GrpcListener(std::move(options)));
  l->listen_fds_ = std::move(sockets->fds);
  l->address_ = std::move(sockets->address);
  l->unix_path_ = std::move(sockets->unix_path);
  if (!l->unix_path_.empty()) {
    if (absl::Status s = ApplySocketFileOptions(l->unix_path_, l->options_.socket_file,
                                                l->options_.socket_file_flags);
        !s.ok()) {
      return s;  // the destructor closes the socket and removes its file
    }
    if (l->options_.unix_peer_slots > 0) {
      l->slots_ = std::make_shared<UnixPeerSlots>(l->options_.unix_peer_slots);
    }
  }
  l->tracked_ = std::make_unique<Tracked>(l->options_.meter, l->slots_.get());
  l->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  l->spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (l->wake_fd_ < 0) {
    return absl::InternalError(std::string("eventfd for the gRPC listener: ") + std::strerror(errno));
  }
  return l;
}

void GrpcListener::AddAcceptors(grpc::ServerBuilder* builder,
                                std::shared_ptr<grpc::ServerCredentials> tls) {
  if (slots_ && tls) {
    spdlog::info(
        "gRPC listener: TLS on {}: callers are identified by their client "
        "certificates only, not by uid/gid",
        address_);
    slots_.reset();
  }
  tracked_->slots = slots_.get();
  if (slots_) {
    slot_acceptors_ = AddUnixPeerAcceptors(builder, slots_);
    return;
  }
  acceptor_ = builder->experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      tls ? tls : grpc::InsecureServerCredentials());
}

void GrpcListener::Start() {
  thread_ = std::thread([this] { AcceptLoop(); });
}

void GrpcListener::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  for (int fd : listen_fds_) close(fd);
  listen_fds_.clear();
  if (!unix_path_.empty()) unlink(unix_path_.c_str());
  unix_path_.clear();
}

GrpcListener::~GrpcListener() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
  if (spare_fd_ >= 0) close(spare_fd_);
}

void GrpcListener::AcceptLoop() {
  std::vector<pollfd> fds;
  for (int fd : listen_fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({wake_fd_, POLLIN, 0});
  std::chrono::steady_clock::time_point last_sweep;
  while (true) {
    // Wakes at least once a second so that connections() follows gRPC's closes, and
    // every kSweepMs while connections are open, to meter what they send.
    const bool metering = options_.meter && !tracked_->open.empty();
    const int n = poll(fds.data(), fds.size(), metering ? kSweepMs : 1000);
    if (n < 0 && errno != EINTR) {
      spdlog::error("grpc listener: poll failed: {}", std::strerror(errno));
      return;
    }
    if (fds.back().revents != 0) return;
    if (std::chrono::steady_clock::now() - tracked_->last_refresh >= std::chrono::seconds(1)) {
      const size_t before = tracked_->open.size();
      tracked_->Refresh();
      open_.store(tracked_->open.size(), std::memory_order_relaxed);
      // Connections that held large unfinished requests were freed into malloc's
      // arenas, in pieces glibc keeps unless asked: give the pages back, so the agent's
      // memory falls when such clients leave. Not for every client that leaves:
      // malloc_trim stalls other threads' allocations while it walks the arenas.
      if (tracked_->open.size() < before && options_.meter && options_.meter->TakeTrimHint()) {
        malloc_trim(0);
      }
    }
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents != 0) AcceptReady(fds[i].fd);
    }
    if (metering && std::chrono::steady_clock::now() - last_sweep >= std::chrono::milliseconds(kSweepMs)) {
      options_.meter->Sweep();
      last_sweep = std::chrono::steady_clock::now();
    }
  }
}

void GrpcListener::AcceptReady(int listen_fd) {
  for (int burst = 0; burst < 256; ++burst) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        // Take the connection off the queue with the spare descriptor and close it, so
        // the client learns at once instead of waiting in the backlog.
        if (spare_fd_ >= 0) close(spare_fd_);
        fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) Refuse(fd, "out_of_descriptors");
        spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) continue;
      }
      return;  // EAGAIN, or an error of that one connection (ECONNABORTED ...)
    }
    tracked_->Forget(fd);  // a tracked descriptor gRPC closed, now reused
    // At the limit, look again whether gRPC has closed some (at most 10 times a second:
    // a flood of connections must not turn into a flood of fstat calls).
    if (tracked_->open.size() >= options_.max_connections &&
        std::chrono::steady_clock::now() - tracked_->last_refresh >= std::chrono::milliseconds(100)) {
      tracked_->Refresh();
    }
    if (tracked_->open.size() >= options_.max_connections) {
      Refuse(fd, "connection_limit");
      continue;
    }
    std::optional<size_t> slot;
    grpc::experimental::ExternalConnectionAcceptor* acceptor = AcceptorFor(fd, &slot);
    if (acceptor == nullptr) continue;  // refused
    if (!tracked_->Add(fd, slot)) {     // never seen: fstat of a socket just accepted
      if (slot) slots_->Release(*slot);
      Refuse(fd, "untrackable");
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on unix
    open_.store(tracked_->open.size(), std::memory_order_relaxed);
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
    p.listener_fd = listen_fd;
    p.fd = fd;
    acceptor->HandleNewConnection(&p);
  }
}

grpc::experimental::ExternalConnectionAcceptor* GrpcListener::AcceptorFor(
    int fd, std::optional<size_t>* slot) {
  if (!slots_) return acceptor_.get();
  absl::StatusOr<UnixPeer> peer = options_.peer_of(fd);
  if (peer.ok()) *slot = slots_->Acquire(*peer);
  // All held: maybe by peers whose connections gRPC has closed since the last look (at
  // most 10 looks a second, as at the connection limit).
  if (peer.ok() && !*slot &&
      std::chrono::steady_clock::now() - tracked_->last_refresh >= std::chrono::milliseconds(100)) {
    tracked_->Refresh();
    open_.store(tracked_->open.size(), std::memory_order_relaxed);
    *slot = slots_->Acquire(*peer);
  }
  if (*slot) {
    spdlog::debug("grpc listener: unix connection from uid {} gid {} (peer slot {})", peer->uid,
                  peer->gid, **slot);
    return slot_acceptors_[**slot].get();
  }
  // A connection nobody can be told apart from: refused, never served under another
  // peer's identity nor under none.
  Refuse(fd, peer.ok() ? "unix_peer_slots" : "unix_peer_unknown",
         peer.ok() ? absl::StrCat(" (uid ", peer->uid, " gid ", peer->gid, ": all ", slots_->size(),
                                  " peer slots are held by other uid/gid)")
                   : " (" + std::string(peer.status().message()) + ")");
  return nullptr;
}

void GrpcListener::Refuse(int fd, std::string_view reason, std::string_view detail) {
  // RST rather than FIN: the client fails fast instead of reading an orderly close.
  struct linger lg {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(fd);
  if (options_.on_refused) options_.on_refused(reason);
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  uint64_t suppressed = 0;
  if (refusal_log_.Admit(now_ms, &suppressed)) {
    spdlog::warn(
        "grpc listener: refusing new connections ({}{}): {} open, at most {} ({} more "
        "refused since the last warning)",
        reason, detail, tracked_->open.size(), options_.max_connections, suppressed);
  }
}

}  // namespace kspool::agent
