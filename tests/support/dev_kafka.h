// DevKafka: a kspool-devkafka process for a test (a mock Kafka cluster on loopback
// TCP ports), with its fault-command socket.
#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.h"

namespace kspool::testing {

class DevKafka {
 public:
  // `topics`: "name:partitions" each; `extra_args` go to kspool-devkafka as they are
  // (e.g. {"--broker-ports", "P1,P2"}). Fails the test (and throws) if it does not start.
  DevKafka(const std::string& log_dir, int brokers, const std::vector<std::string>& topics,
           const std::vector<std::string>& extra_args = {});
  const std::string& bootstrap() const { return bootstrap_; }
  // The brokers' ports, "P1,P2,..." (for --broker-ports of a cluster started after it).
  std::string broker_ports() const;
  // SIGTERM, then waits for the exit (SIGKILL after 10 s); its ports are free after.
  void Stop();
  // Sends one fault command ("broker down all", ...); returns the reply line.
  std::string Command(const std::string& line);

 private:
  std::unique_ptr<ChildProcess> proc_;
  std::string bootstrap_;
  std::string control_host_;
  int control_port_ = 0;
};

}  // namespace kspool::testing
