// The Bruce/Dory-format load of kspool-bench (--bruce-datagram PATH): N sender threads,
// each writing AnyPartition messages of incompressible values to the agent's UNIX
// datagram socket as fast as the kernel lets it (a blocking socket: when the agent reads
// no faster, the sender waits, as Bruce's clients do).
// Thread safety: RunBruceDatagramLoad() from one thread.
#pragma once

#include <cstdint>
#include <string>

namespace kspool::bench {

struct BruceLoadResult {
  uint64_t sent = 0;    // datagrams the kernel took
  uint64_t errors = 0;  // send() failures (the senders stop at the first)
  double seconds = 0;
};

BruceLoadResult RunBruceDatagramLoad(const std::string& path, int senders, int value_bytes,
                                     int topics, double duration_s);

}  // namespace kspool::bench
