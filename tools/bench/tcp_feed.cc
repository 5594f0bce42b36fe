#include "tools/bench/tcp_feed.h"

#include <chrono>
#include <cstring>

#include "tools/bench/printable_random.h"
#include "tools/common/bruce_writer.h"

namespace kspool::bench {
namespace {

constexpr size_t kChunkBytes = 16 * 1024;
constexpr char kSyslogPrefix[] = "<134>Jan  1 00:00:00 bench bench: ";

}  // namespace

TcpFeedResult RunTcpFeed(const std::string& address, TcpFeedFormat format, int value_bytes,
                         const std::string& topic, double duration_s) {
  using Clock = std::chrono::steady_clock;
  TcpFeedResult r;
  kspool::tools::BruceConnection conn;  // a plain TCP stream for "tcp:HOST:PORT"
  if (std::string err = conn.Connect("tcp:" + address); !err.empty()) {
    r.error = err;
    return r;
  }
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(duration_s));
  PrintableRandom random;
  std::string value(static_cast<size_t>(value_bytes), 'x');
  std::string chunk;
  chunk.reserve(kChunkBytes + 256 + value.size());
  int64_t now_ms = 0;
  while (Clock::now() < end) {
    now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
    chunk.clear();
    uint64_t in_chunk = 0;
    while (chunk.size() < kChunkBytes) {
      random.Fill(&value);
      if (format == TcpFeedFormat::kSyslogLines) {
        chunk.append(kSyslogPrefix).append(value).push_back('\n');
      } else {
        chunk.append(kspool::tools::EncodeBruceMessage(topic, now_ms, "", value));
      }
      ++in_chunk;
    }
    if (const int err = conn.Send(chunk); err != 0) {
      r.error = address + ": " + std::strerror(err);
      break;
    }
    r.sent += in_chunk;
    r.bytes += chunk.size();
  }
  conn.Close();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace kspool::bench
