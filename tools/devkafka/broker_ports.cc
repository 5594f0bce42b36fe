#include "broker_ports.h"

#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace kspool::devkafka {
namespace {

std::mutex mu;
std::vector<int> armed;  // guarded by mu
size_t taken = 0;        // guarded by mu

using BindFn = int (*)(int, const sockaddr*, socklen_t);

BindFn RealBind() {
  static const BindFn real = reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind"));
  return real;
}

}  // namespace

bool ParseBrokerPorts(const std::string& text, std::vector<int>* ports) {
  ports->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    int port = 0;
    auto [p, ec] = std::from_chars(text.data() + start, text.data() + end, port);
    if (ec != std::errc() || p != text.data() + end || port < 1 || port > 65535) return false;
    ports->push_back(port);
    start = end + 1;
  }
  return !ports->empty();
}

void ArmBrokerPorts(const std::vector<int>& ports) {
  std::lock_guard<std::mutex> lock(mu);
  armed = ports;
  taken = 0;
}

size_t DisarmBrokerPorts() {
  std::lock_guard<std::mutex> lock(mu);
  armed.clear();
  return taken;
}

}  // namespace kspool::devkafka

// Interposes libc's bind() for the whole process (librdkafka's calls included).
extern "C" int bind(int fd, const struct sockaddr* addr, socklen_t len) noexcept {
  using namespace kspool::devkafka;
  BindFn real = RealBind();
  if (real == nullptr) return -1;
  if (addr == nullptr || addr->sa_family != AF_INET || len < sizeof(sockaddr_in)) {
    return real(fd, addr, len);
  }
  sockaddr_in fixed = *reinterpret_cast<const sockaddr_in*>(addr);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (fixed.sin_port != 0 || taken >= armed.size()) return real(fd, addr, len);
    fixed.sin_port = htons(static_cast<uint16_t>(armed[taken++]));
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int rc = real(fd, reinterpret_cast<const sockaddr*>(&fixed), sizeof(fixed));
  if (rc != 0) {
    // librdkafka 2.0.2 aborts on its own cleanup of a half-made cluster: exit first,
    // naming the port.
    std::fprintf(stderr, "kspool-devkafka: --broker-ports: port %d: %s\n", ntohs(fixed.sin_port),
                 std::strerror(errno));
    std::_Exit(1);
  }
  return rc;
}
