// SpoolHarness: an in-process kspool agent (Agent::Start, real gRPC on a free loopback
// port) whose WAL sits on a FaultInjectionFileSystem, draining into a kspool-devkafka
// process, plus the checks every fault test ends with: the ledger (accepted =
// delivered + discarded + still in the WAL, by topic, with the WAL scanned) and "every
// acknowledged message is in Kafka or in the dead letters".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/app/agent.h"
#include "kspool/v1/admin.grpc.pb.h"
#include "kspool/v1/spool.grpc.pb.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/fault_fs.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"

namespace kspool::testing {

struct SendResult {
  grpc::Status status;
  std::vector<uint64_t> seqs;
  std::string retry_after_ms;  // trailing metadata, when present
  int64_t receive_time_ms = 0;
};

// `n` message values: prefix + index, then `pad` bytes of 'x'.
inline std::vector<std::string> Values(const std::string& prefix, int n, size_t pad = 0) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(prefix + std::to_string(i) + std::string(pad, 'x'));
  return v;
}

class SpoolHarness {
 public:
  explicit SpoolHarness(std::vector<std::string> topics = {"t:4"}, int brokers = 3);
  ~SpoolHarness();

  // Starts (or restarts) the agent; `tweak` edits the config first.
  void Start(const std::function<void(agent::Config*)>& tweak = nullptr);
  void Stop();

  // Sends messages with these values to `topic` (optionally keyed); remembers what was
  // acknowledged.
  SendResult Send(const std::string& topic, const std::vector<std::string>& values,
                  const std::string& key = "");
  SendResult SendRequest(const kspool::v1::SendRequest& req);
  // Sends one message (value: `tag` twice, see FailSyncOfWrite) whose WAL write fails its
  // sync, and only that write: no other sync is failed, whatever else syncs meanwhile.
  // Check fs().injected_sync_failures() to see that it was.
  SendResult SendFailingItsSync(const std::string& topic, const std::string& tag);
  kspool::v1::Spool::Stub& spool() { return *stub_; }
  kspool::v1::GetDiscardReportResponse Report();

  bool WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout);
  bool WaitUntilDrained(std::chrono::milliseconds timeout);

  // Asserts (gtest) the ledger and that every acked message of `topic` is in Kafka or
  // in the dead letters; returns the dead letters' reasons by seq.
  std::map<uint64_t, std::string> ExpectAllAccountedFor(const std::string& topic);

  agent::Agent& agent() { return *agent_; }
  DevKafka& kafka() { return *kafka_; }
  FaultInjectionFileSystem& fs() { return *fs_; }
  const std::map<uint64_t, std::pair<std::string, std::string>>& acked() const { return acked_; }
  std::string wal_dir() const { return dir_.sub("wal"); }

 private:
  TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::shared_ptr<FaultInjectionFileSystem> fs_;
  std::shared_ptr<rocksdb::Env> env_;
  std::unique_ptr<agent::Agent> agent_;
  std::unique_ptr<kspool::v1::Spool::Stub> stub_;
  std::unique_ptr<kspool::v1::Admin::Stub> admin_;
  std::map<uint64_t, std::pair<std::string, std::string>> acked_;  // seq -> (topic, value)
};

}  // namespace kspool::testing
