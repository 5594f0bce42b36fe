// BruceWriter: writes messages in Bruce's and Dory's input format (their
// doc/sending_messages.md) to a kspool agent's Bruce sockets, for kspoolctl and
// kspool-bench. AnyPartition (ApiKey 256) or PartitionKey (ApiKey 257), ApiVersion 0,
// big-endian. Header-only; depends on nothing of kspool.
// Thread safety: free functions; a BruceConnection belongs to one thread.
#pragma once

#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace kspool::tools {

inline void AppendBE(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// One message: PartitionKey when `partition_key` is set, else AnyPartition.
inline std::string EncodeBruceMessage(std::string_view topic, int64_t timestamp_ms,
                                      std::string_view key, std::string_view value,
                                      std::optional<int32_t> partition_key = std::nullopt) {
  std::string m;
  m.reserve(32 + topic.size() + key.size() + value.size());
  const size_t size = (partition_key ? 32 : 28) + topic.size() + key.size() + value.size();
  AppendBE(&m, size, 4);
  AppendBE(&m, partition_key ? 257 : 256, 2);
  AppendBE(&m, 0, 2);  // ApiVersion
  AppendBE(&m, 0, 2);  // Flags
  if (partition_key) AppendBE(&m, static_cast<uint32_t>(*partition_key), 4);
  AppendBE(&m, topic.size(), 2);
  m.append(topic);
  AppendBE(&m, static_cast<uint64_t>(timestamp_ms), 8);
  AppendBE(&m, key.size(), 4);
  m.append(key);
  AppendBE(&m, value.size(), 4);
  m.append(value);
  return m;
}

// A connected socket to a Bruce input: a UNIX socket path (datagram, or stream if the
// socket is one), or "tcp:HOST:PORT". Never read: kspool writes nothing back.
class BruceConnection {
 public:
  // Empty on success, else what went wrong.
  std::string Connect(const std::string& target) {
    if (target.rfind("tcp:", 0) == 0) return ConnectTcp(target.substr(4));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (target.empty() || target.size() >= sizeof sa.sun_path) return "bad socket path";
    std::memcpy(sa.sun_path, target.data(), target.size());
    for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
      fd_ = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
      if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
        datagram_ = type == SOCK_DGRAM;
        return "";
      }
      const int err = errno;
      Close();
      if (err != EPROTOTYPE) return target + ": " + std::strerror(err);
    }
    return target + ": cannot connect";
  }
  bool datagram() const { return datagram_; }
  // Sends one message (one datagram, or written whole on a stream); errno on failure.
  int Send(std::string_view bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno;
      off += static_cast<size_t>(n);
    }
    return 0;
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  ~BruceConnection() { Close(); }

 private:
  std::string ConnectTcp(const std::string& address) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) return "'" + address + "' is not HOST:PORT";
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints,
                    &res) != 0) {
      return "cannot resolve " + address;
    }
    std::string error = address + ": cannot connect";
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      fd_ = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd_ >= 0 && connect(fd_, ai->ai_addr, ai->ai_addrlen) == 0) {
        error.clear();
        break;
      }
      error = address + ": " + std::strerror(errno);
      Close();
    }
    freeaddrinfo(res);
    return error;
  }

  int fd_ = -1;
  bool datagram_ = false;
};

}  // namespace kspool::tools
