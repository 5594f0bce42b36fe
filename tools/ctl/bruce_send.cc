// `send --bruce-socket PATH` / `send --bruce-tcp HOST:PORT`: messages in Bruce's and
// Dory's input format, for manual tests of an agent's Bruce input. Nothing comes back:
// kspool never answers on these sockets, so this only says what was written.
#include <chrono>
#include <iostream>

#include "tools/common/bruce_writer.h"
#include "tools/ctl/commands.h"
#include "tools/ctl/exit_codes.h"

namespace kspool::ctl {

int BruceSend(const std::string& target, SendOptions options, std::optional<int32_t> partition_key,
              const Output& out) {
  if (options.partition || !options.headers.empty() || options.wait_for_kafka) {
    std::cerr << "kspoolctl: the Bruce format has no --partition (use --partition-key), no "
                 "--header and no --wait kafka\n";
    return kExitUsage;
  }
  if (options.values.empty()) {
    for (std::string line; std::getline(std::cin, line);) options.values.push_back(line);
  }
  if (options.values.empty()) {
    std::cerr << "kspoolctl: nothing to send: give values as arguments or lines on stdin\n";
    return kExitUsage;
  }
  kspool::tools::BruceConnection conn;
  if (std::string err = conn.Connect(target); !err.empty()) {
    std::cerr << "kspoolctl: " << err << "\n";
    return kExitError;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  for (const std::string& v : options.values) {
    const std::string bytes = kspool::tools::EncodeBruceMessage(
        options.topic, now, options.key.value_or(""), v, partition_key);
    if (int err = conn.Send(bytes); err != 0) {
      std::cerr << "kspoolctl: " << target << ": " << std::strerror(err) << "\n";
      return kExitError;
    }
  }
  const char* transport = target.rfind("tcp:", 0) == 0 ? "tcp"
                          : conn.datagram()            ? "datagram"
                                                       : "stream";
  if (out.json) {
    std::cout << "{\"sent\":" << options.values.size() << ",\"transport\":\"" << transport
              << "\"}\n";
  } else {
    std::cout << "wrote " << options.values.size() << " message(s) in Bruce format (" << transport
              << "); the agent does not answer: see kspoolctl stats\n";
  }
  return kExitOk;
}

}  // namespace kspool::ctl
