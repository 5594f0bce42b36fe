#include "tests/support/h2_stall_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace kspool::testing {
namespace {

enum FrameType : uint8_t { kData = 0, kHeaders = 1, kRst = 3, kSettings = 4, kPing = 6, kGoAway = 7, kWindowUpdate = 8 };

void PutFrame(std::string* out, uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  const char head[9] = {static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n),
                        static_cast<char>(type), static_cast<char>(flags),
                        static_cast<char>(stream >> 24), static_cast<char>(stream >> 16),
                        static_cast<char>(stream >> 8), static_cast<char>(stream)};
  out->append(head, 9);
  out->append(payload);
}

uint32_t Be32(const char* p) {
  return (uint32_t{static_cast<uint8_t>(p[0])} << 24) | (uint32_t{static_cast<uint8_t>(p[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(p[2])} << 8) | uint32_t{static_cast<uint8_t>(p[3])};
}

// HPACK "literal header field without indexing, new name", no Huffman; short strings.
void PutHeader(std::string* out, const std::string& name, const std::string& value) {
  out->push_back(0);
  out->push_back(static_cast<char>(name.size()));
  out->append(name);
  out->push_back(static_cast<char>(value.size()));
  out->append(value);
}

}  // namespace

struct H2StallClient::Conn {
  int fd = -1;
  bool closed = false;
  std::string in, out;
  int64_t conn_window = 65535;
  int64_t initial_window = 65535;
  uint64_t data_received = 0;
  struct Stream {
    int64_t window;
    uint64_t sent = 0;
    bool closed = false;
  };
  std::map<uint32_t, Stream> streams;
};

H2StallClient::H2StallClient(H2StallOptions options) : options_(std::move(options)) {
  for (int i = 0; i < options_.connections; ++i) {
    auto c = std::make_unique<Conn>();
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(options_.port));
    inet_pton(AF_INET, options_.host.c_str(), &sa.sin_addr);
    if (c->fd < 0 || connect(c->fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      throw std::runtime_error("h2 stall client: cannot connect");
    }
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
    c->out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    PutFrame(&c->out, kSettings, 0, 0, "");
    for (int s = 0; s < options_.streams_per_connection; ++s) {
      const uint32_t id = 1 + 2 * static_cast<uint32_t>(s);
      std::string block;
      PutHeader(&block, ":method", "POST");
      PutHeader(&block, ":scheme", "http");
      PutHeader(&block, ":path", options_.path);
      PutHeader(&block, ":authority", "localhost");
      PutHeader(&block, "content-type", "application/grpc");
      PutHeader(&block, "te", "trailers");
      PutFrame(&c->out, kHeaders, 0x4 /*END_HEADERS*/, id, block);
      c->streams[id] = Conn::Stream{c->initial_window};
    }
    conns_.push_back(std::move(c));
  }
}

H2StallClient::~H2StallClient() {
  for (auto& c : conns_) close(c->fd);
}

uint64_t H2StallClient::data_received() const {
  uint64_t n = 0;
  for (const auto& c : conns_) n += c->data_received;
  return n;
}

int H2StallClient::open_connections() const {
  return static_cast<int>(std::count_if(conns_.begin(), conns_.end(), [](auto& c) { return !c->closed; }));
}

void H2StallClient::Drive(Conn& c) {
  // Frames from the server: settings, window updates, pings; resets and trailers end a stream.
  char buf[65536];
  while (true) {
    const ssize_t n = read(c.fd, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      c.closed = true;
      return;
    }
    if (n < 0) break;
    c.in.append(buf, static_cast<size_t>(n));
  }
  while (c.in.size() >= 9) {
    const uint32_t len = Be32(c.in.data()) >> 8;
    if (c.in.size() < 9 + len) break;
    const uint8_t type = static_cast<uint8_t>(c.in[3]), flags = static_cast<uint8_t>(c.in[4]);
    const uint32_t id = Be32(c.in.data() + 5) & 0x7fffffff;
    const std::string payload = c.in.substr(9, len);
    c.in.erase(0, 9 + len);
    if (type == kSettings && !(flags & 1)) {
      for (size_t i = 0; i + 6 <= payload.size(); i += 6) {
        const uint16_t key = static_cast<uint16_t>((static_cast<uint8_t>(payload[i]) << 8) | static_cast<uint8_t>(payload[i + 1]));
        if (key != 4) continue;  // INITIAL_WINDOW_SIZE
        const int64_t v = Be32(payload.data() + i + 2);
        for (auto& [sid, st] : c.streams) st.window += v - c.initial_window;
        c.initial_window = v;
      }
      PutFrame(&c.out, kSettings, 1, 0, "");
    } else if (type == kWindowUpdate && payload.size() == 4) {
      const int64_t inc = Be32(payload.data()) & 0x7fffffff;
      if (id == 0) c.conn_window += inc;
      else if (c.streams.count(id)) c.streams[id].window += inc;
    } else if (type == kData) {
      c.data_received += len;
    } else if (type == kPing && !(flags & 1)) {
      PutFrame(&c.out, kPing, 1, 0, payload);
    } else if ((type == kRst || type == kHeaders) && c.streams.count(id)) {
      c.streams[id].closed = true;
    } else if (type == kGoAway) {
      c.closed = true;
    }
  }
}

uint64_t H2StallClient::Run(std::chrono::milliseconds timeout) {
  // Whole messages: each one's gRPC prefix (uncompressed, its length), then its bytes.
  std::string framed;
  if (!options_.message.empty()) {
    const auto d = static_cast<uint32_t>(options_.message.size());
    framed = {0, static_cast<char>(d >> 24), static_cast<char>(d >> 16), static_cast<char>(d >> 8),
              static_cast<char>(d)};
    framed += options_.message;
  }
  const uint64_t target = framed.empty()
                              ? options_.send_bytes_per_stream
                              : framed.size() * static_cast<uint64_t>(options_.messages_per_stream);
  uint64_t total = 0;
  auto last_progress = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - last_progress < timeout) {
    bool progress = false, pending = false;
    for (auto& cp : conns_) {
      Conn& c = *cp;
      if (c.closed) continue;
      Drive(c);
      for (auto& [id, st] : c.streams) {
        while (!st.closed && st.sent < target && c.out.size() < (256u << 10)) {
          const int64_t room = std::min({c.conn_window, st.window, int64_t{16384},
                                         static_cast<int64_t>(target - st.sent)});
          if (room <= 0) break;
          std::string data(static_cast<size_t>(room), 'x');
          for (size_t i = 0; !framed.empty() && i < data.size(); ++i) {
            data[i] = framed[(st.sent + i) % framed.size()];
          }
          if (framed.empty() && st.sent == 0 && room >= 5) {  // the gRPC prefix: declared length
            const uint32_t d = options_.declared_message_bytes;
            data[0] = 0;
            data[1] = static_cast<char>(d >> 24), data[2] = static_cast<char>(d >> 16);
            data[3] = static_cast<char>(d >> 8), data[4] = static_cast<char>(d);
          }
          PutFrame(&c.out, kData, 0, id, data);
          st.sent += static_cast<uint64_t>(room), st.window -= room, c.conn_window -= room;
          total += static_cast<uint64_t>(room);
          progress = true;
        }
        pending |= !st.closed && st.sent < target;
      }
      if (!c.out.empty()) {
        const ssize_t w = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (w > 0) c.out.erase(0, static_cast<size_t>(w)), progress = true;
        else if (w < 0 && errno != EAGAIN) c.closed = true;
      }
    }
    if (!pending) break;
    if (progress) {
      last_progress = std::chrono::steady_clock::now();
    } else {
      std::vector<pollfd> fds;
      for (auto& c : conns_) if (!c->closed) fds.push_back({c->fd, static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
      poll(fds.data(), fds.size(), 20);
    }
  }
  return total;
}

}  // namespace kspool::testing
