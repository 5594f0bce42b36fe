#include "tools/bench/grpc_ceiling.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "kspool/v1/spool.grpc.pb.h"
#include "tools/bench/cpu.h"

namespace kspool::bench {
namespace {

// Answers every Send at once: one increasing sequence number per message and the
// receive time, which is all the load generator checks. Other methods stay
// unimplemented.
class NullSpool final : public v1::Spool::CallbackService {
 public:
  grpc::ServerUnaryReactor* Send(grpc::CallbackServerContext* ctx, const v1::SendRequest* request,
                                 v1::SendResponse* response) override {
    const int n = request->messages_size();
    const uint64_t first = next_.fetch_add(static_cast<uint64_t>(n));
    response->mutable_sequence()->Reserve(n);
    for (int i = 0; i < n; ++i) response->add_sequence(first + static_cast<uint64_t>(i));
    response->set_receive_time_ms(1);
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  std::atomic<uint64_t> next_{1};
};

// The child: serves until its parent closes `control` (or dies), then exits. Writes the
// port it listens on to `report` (0 if the server did not start).
[[noreturn]] void ServeNull(int report, int control) {
  NullSpool service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) port = 0;
  (void)!write(report, &port, sizeof(port));
  close(report);
  char byte;
  while (read(control, &byte, 1) < 0 && errno == EINTR) {
  }
  if (server) server->Shutdown();
  _exit(0);
}

}  // namespace

absl::StatusOr<GrpcCeilingResult> MeasureGrpcCeiling(LoadOptions load) {
  int report[2], control[2];
  if (pipe(report) != 0 || pipe(control) != 0) {
    return absl::InternalError(std::string("grpc ceiling: pipe: ") + std::strerror(errno));
  }
  const pid_t child = fork();
  if (child < 0)
    return absl::InternalError(std::string("grpc ceiling: fork: ") + std::strerror(errno));
  if (child == 0) {
    close(report[0]);
    close(control[1]);
    ServeNull(report[1], control[0]);
  }
  close(report[1]);
  close(control[0]);
  int port = 0;
  const bool got = read(report[0], &port, sizeof(port)) == sizeof(port);
  close(report[0]);
  GrpcCeilingResult r;
  absl::Status status;
  if (!got || port <= 0) {
    status = absl::InternalError("grpc ceiling: the null server did not start");
  } else {
    load.agent = "127.0.0.1:" + std::to_string(port);
    const CpuSnapshot before = TakeCpuSnapshot(child);
    const LoadResult l = RunLoad(load, nullptr);
    const CpuSnapshot after = TakeCpuSnapshot(child);
    uint64_t failed = 0;
    for (const auto& [_, n] : l.failures) failed += n;
    if (failed > 0 || !l.check_errors.empty() || l.acked == 0) {
      status = absl::UnavailableError("grpc ceiling: " + std::to_string(failed) +
                                      " Sends failed, " + std::to_string(l.check_errors.size()) +
                                      " kinds of wrong answers, " + std::to_string(l.acked) +
                                      " messages answered");
    }
    r.messages = l.acked;
    r.messages_per_s = l.seconds > 0 ? double(l.acked) / l.seconds : 0;
    r.cpu_us_per_message = l.acked ? (after.agent_s - before.agent_s) / double(l.acked) * 1e6 : 0;
  }
  close(control[1]);  // the child shuts down
  int wstatus = 0;
  while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!status.ok()) return status;
  return r;
}

}  // namespace kspool::bench
