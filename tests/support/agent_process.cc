#include "tests/support/agent_process.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "tests/support/wait.h"

namespace kspool::testing {

AgentProcess::AgentProcess(const std::string& wal_dir, const std::string& log_path,
                           const std::string& brokers, std::vector<std::string> extra_args,
                           std::vector<std::string> extra_env, std::vector<std::string> launcher) {
  auto given = [&](const std::string& flag) {
    return std::find(extra_args.begin(), extra_args.end(), flag) != extra_args.end();
  };
  std::vector<std::string> argv = {KSPOOL_AGENT_BIN,
                                   "--wal-dir",
                                   wal_dir,
                                   "--kafka-brokers",
                                   brokers,
                                   "--commit-point-interval-ms",
                                   "50"};
  for (const char* flag : {"--listen", "--metrics-listen"}) {
    if (!given(flag)) argv.insert(argv.end(), {flag, "127.0.0.1:0"});
  }
  if (!given("--log-level")) argv.insert(argv.end(), {"--log-level", "info"});
  // The smallest reserve, not an eighth of the volume: test WALs often sit on tmpfs, where
  // a preallocated file is memory.
  if (!given("--wal-reserve-bytes")) argv.insert(argv.end(), {"--wal-reserve-bytes", "4MiB"});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.insert(argv.begin(), launcher.begin(), launcher.end());
  proc_ = std::make_unique<ChildProcess>(argv, log_path, std::move(extra_env));
  auto ready = proc_->WaitForLine("kspool-agent ready: grpc=", std::chrono::seconds(30));
  if (!ready) {
    // The log's last lines say why (it is often deleted with its test's temporary dir).
    std::ifstream in(log_path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > 2000) text = "…" + text.substr(text.size() - 2000);
    throw std::runtime_error("kspool-agent did not start; " + log_path + " ends:\n" + text);
  }
  ready_line_ = *ready;
  address_ = ready->substr(0, ready->find(' '));
  if (size_t h = ready->find(" http="); h != std::string::npos) {
    http_address_ = ready->substr(h + 6, ready->find(' ', h + 6) - (h + 6));
  }
  auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  spool_ = kspool::v1::Spool::NewStub(channel);
  admin_ = kspool::v1::Admin::NewStub(channel);
}

grpc::Status AgentProcess::Send(const kspool::v1::SendRequest& req, kspool::v1::SendResponse* resp,
                                int timeout_ms) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  return spool_->Send(&ctx, req, resp);
}

kspool::v1::GetCommitPointResponse AgentProcess::CommitPoint() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  kspool::v1::GetCommitPointResponse resp;
  grpc::Status s = admin_->GetCommitPoint(&ctx, {}, &resp);
  if (!s.ok()) throw std::runtime_error("GetCommitPoint: " + s.error_message());
  return resp;
}

kspool::v1::GetWalStatsResponse AgentProcess::WalStats() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  kspool::v1::GetWalStatsResponse resp;
  grpc::Status s = admin_->GetWalStats(&ctx, {}, &resp);
  if (!s.ok()) throw std::runtime_error("GetWalStats: " + s.error_message());
  return resp;
}

bool AgentProcess::WaitUntilDrained(std::chrono::milliseconds timeout) {
  return WaitUntil([&] { return WalStats().entries() == 0; }, timeout,
                   std::chrono::milliseconds(50));
}

}  // namespace kspool::testing
