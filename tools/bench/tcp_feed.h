// The TCP feeds of kspool-bench, for the peer benchmark (tools/bench-peers.sh): one TCP
// connection, closed loop, writing messages with VALUE_BYTES of payload as fast as the
// socket takes them (blocking writes of about 16 KiB of whole messages each) for a
// duration. Two formats:
//   kSyslogLines (--tcp-lines): RFC 3164 lines, "<134>Jan  1 00:00:00 bench bench: "
//     then the payload then '\n', for rsyslog's imtcp (the payload is the message
//     text after the tag's colon and space);
//   kBruce (--bruce-tcp): Bruce/Dory AnyPartition messages to one topic, for the
//     agent's Bruce TCP input (tools/common/bruce_writer.h).
// Payloads are random printable characters (64 symbols, no newline), new for every
// message, so both formats carry the same bytes and neither compresses well.
// Thread safety: RunTcpFeed() from one thread.
#pragma once

#include <cstdint>
#include <string>

namespace kspool::bench {

enum class TcpFeedFormat { kSyslogLines, kBruce };

struct TcpFeedResult {
  uint64_t sent = 0;   // whole messages the socket took
  uint64_t bytes = 0;  // their bytes on the wire
  std::string error;   // connect or write failure; empty if none
  double seconds = 0;
};

// `address` is HOST:PORT; `topic` is used by kBruce only.
TcpFeedResult RunTcpFeed(const std::string& address, TcpFeedFormat format, int value_bytes,
                         const std::string& topic, double duration_s);

}  // namespace kspool::bench
