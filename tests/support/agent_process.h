// AgentProcess: a real kspool-agent process on a WAL directory, listening on a free
// loopback port, with gRPC stubs for its Spool and Admin services.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kspool/v1/admin.grpc.pb.h"
#include "kspool/v1/spool.grpc.pb.h"
#include "tests/support/child_process.h"

namespace kspool::testing {

class AgentProcess {
 public:
  // `extra_env`: NAME=VALUE entries added to the agent's environment. `launcher`: a
  // command the agent is started under, e.g. {"prlimit", "--nofile=1024:1024"}.
  AgentProcess(const std::string& wal_dir, const std::string& log_path,
               const std::string& brokers, std::vector<std::string> extra_args = {},
               std::vector<std::string> extra_env = {}, std::vector<std::string> launcher = {});
  const std::string& address() const { return address_; }
  const std::string& http_address() const { return http_address_; }
  // The rest of the agent's "kspool-agent ready: grpc=" line (e.g. for bruce_tcp=).
  const std::string& ready_line() const { return ready_line_; }
  ChildProcess& process() { return *proc_; }

  kspool::v1::Spool::Stub& spool() { return *spool_; }
  kspool::v1::Admin::Stub& admin() { return *admin_; }
  // Convenience calls with a deadline.
  grpc::Status Send(const kspool::v1::SendRequest& req, kspool::v1::SendResponse* resp,
                    int timeout_ms = 10000);
  kspool::v1::GetCommitPointResponse CommitPoint();
  kspool::v1::GetWalStatsResponse WalStats();
  // Polls WalStats until the WAL is empty; false on timeout.
  bool WaitUntilDrained(std::chrono::milliseconds timeout);

 private:
  std::unique_ptr<ChildProcess> proc_;
  std::string address_;
  std::string http_address_;
  std::string ready_line_;
  std::unique_ptr<kspool::v1::Spool::Stub> spool_;
  std::unique_ptr<kspool::v1::Admin::Stub> admin_;
};

}  // namespace kspool::testing
