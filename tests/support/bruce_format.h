// BruceFormat: test-side writers of Bruce/Dory input messages, written from the format's
// documentation (doc/sending_messages.md of Bruce and Dory), independently of the
// agent's decoder: Size int32 (whole message), ApiKey int16 (256 AnyPartition, 257
// PartitionKey), ApiVersion int16, Flags int16, [PartitionKey int32], TopicSize int16,
// Topic, Timestamp int64, KeySize int32, Key, ValueSize int32, Value; big-endian.
// Also small senders over a UNIX datagram socket, a UNIX stream socket and TCP.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace kspool::testing {

struct BruceFields {
  int16_t api_key = 256;
  int16_t api_version = 0;
  int16_t flags = 0;
  std::optional<int32_t> partition_key;  // written for api_key 257
  std::string topic;
  int64_t timestamp_ms = 0;
  std::string key;
  std::string value;
  std::optional<int32_t> size_override;  // a Size field that lies
};

inline void PutBE(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::string BruceMessageBytes(const BruceFields& f) {
  std::string body;
  PutBE(&body, static_cast<uint16_t>(f.api_key), 2);
  PutBE(&body, static_cast<uint16_t>(f.api_version), 2);
  PutBE(&body, static_cast<uint16_t>(f.flags), 2);
  if (f.partition_key) PutBE(&body, static_cast<uint32_t>(*f.partition_key), 4);
  PutBE(&body, static_cast<uint16_t>(f.topic.size()), 2);
  body += f.topic;
  PutBE(&body, static_cast<uint64_t>(f.timestamp_ms), 8);
  PutBE(&body, static_cast<uint32_t>(f.key.size()), 4);
  body += f.key;
  PutBE(&body, static_cast<uint32_t>(f.value.size()), 4);
  body += f.value;
  std::string out;
  PutBE(&out,
        static_cast<uint32_t>(f.size_override.value_or(static_cast<int32_t>(body.size() + 4))), 4);
  return out + body;
}

inline std::string AnyPartition(const std::string& topic, int64_t ts, const std::string& key,
                                const std::string& value) {
  return BruceMessageBytes({256, 0, 0, std::nullopt, topic, ts, key, value, std::nullopt});
}

inline std::string PartitionKey(int32_t pkey, const std::string& topic, int64_t ts,
                                const std::string& key, const std::string& value) {
  return BruceMessageBytes({257, 0, 0, pkey, topic, ts, key, value, std::nullopt});
}

// A connected socket: SOCK_DGRAM or SOCK_STREAM to a UNIX path, or TCP to HOST:PORT
// (IPv4 literal). Throws on failure.
inline int ConnectUnix(const std::string& path, int type) {
  int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.data(), std::min(path.size(), sizeof(sa.sun_path) - 1));
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("cannot connect to " + path + ": " + std::strerror(errno));
  }
  return fd;
}

inline int ConnectTcp(const std::string& address) {
  const size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("cannot connect to " + address + ": " + std::strerror(errno));
  }
  return fd;
}

// Writes all of `bytes` (a stream) or sends it as one datagram; throws on failure.
inline void SendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
}

}  // namespace kspool::testing
