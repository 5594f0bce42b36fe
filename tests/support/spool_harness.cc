#include "tests/support/spool_harness.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <thread>

#include "tests/support/wait.h"

namespace kspool::testing {

SpoolHarness::SpoolHarness(std::vector<std::string> topics, int brokers)
    : kafka_(std::make_unique<DevKafka>(dir_.path(), brokers, topics)),
      fs_(std::make_shared<FaultInjectionFileSystem>()),
      env_(EnvFor(fs_)) {}

SpoolHarness::~SpoolHarness() { Stop(); }

void SpoolHarness::Start(const std::function<void(agent::Config*)>& tweak) {
  Stop();
  agent::Config c;
  c.wal.dir = wal_dir();
  c.listen = "127.0.0.1:0";
  c.metrics_listen = "127.0.0.1:0";
  c.kafka_brokers = kafka_->bootstrap();
  c.drain.commit_point_interval_ms = 50;
  c.drain.retry_backoff_ms = 50;
  c.drain.retry_backoff_max_ms = 500;
  c.drain.wal_reopen_interval_ms = 200;
  c.wal.max_bytes = 1ull << 30;
  c.wal.reserve_bytes = 4 << 20;  // the smallest: the WAL may sit on tmpfs (memory)
  c.drain.shutdown_grace_ms = 2000;
  if (tweak) tweak(&c);
  agent::AgentDeps deps;
  deps.env = env_;
  auto a = agent::Agent::Start(c, deps);
  ASSERT_TRUE(a.ok()) << a.status();
  agent_ = std::move(a).value();
  auto channel = grpc::CreateChannel(agent_->grpc_address(), grpc::InsecureChannelCredentials());
  stub_ = kspool::v1::Spool::NewStub(channel);
  admin_ = kspool::v1::Admin::NewStub(channel);
}

void SpoolHarness::Stop() {
  if (agent_) agent_->Shutdown();
  agent_.reset();
  stub_.reset();
  admin_.reset();
}

kspool::v1::GetDiscardReportResponse SpoolHarness::Report() {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  kspool::v1::GetDiscardReportResponse resp;
  grpc::Status s = admin_->GetDiscardReport(&ctx, {}, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

SendResult SpoolHarness::SendRequest(const kspool::v1::SendRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  kspool::v1::SendResponse resp;
  SendResult r;
  r.status = stub_->Send(&ctx, req, &resp);
  for (const auto& [k, v] : ctx.GetServerTrailingMetadata()) {
    if (k == "retry-after-ms") r.retry_after_ms.assign(v.data(), v.size());
  }
  if (r.status.ok()) {
    r.receive_time_ms = resp.receive_time_ms();
    for (int i = 0; i < resp.sequence_size(); ++i) {
      r.seqs.push_back(resp.sequence(i));
      acked_[resp.sequence(i)] = {req.messages(i).topic(), req.messages(i).value()};
    }
  }
  return r;
}

SendResult SpoolHarness::Send(const std::string& topic, const std::vector<std::string>& values,
                              const std::string& key) {
  kspool::v1::SendRequest req;
  for (const std::string& v : values) {
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value(v);
    if (!key.empty()) m->set_key(key);
  }
  return SendRequest(req);
}

SendResult SpoolHarness::SendFailingItsSync(const std::string& topic, const std::string& tag) {
  fs_->FailSyncOfWrite(tag);
  return Send(topic, {tag + "|" + tag});
}

bool SpoolHarness::WaitUntil(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  return kspool::testing::WaitUntil(cond, timeout);
}

bool SpoolHarness::WaitUntilDrained(std::chrono::milliseconds timeout) {
  return WaitUntil([&] { return agent_->wal()->GetStats().entries == 0; }, timeout);
}

std::map<uint64_t, std::string> SpoolHarness::ExpectAllAccountedFor(const std::string& topic) {
  std::map<uint64_t, std::string> dead_reason;
  wal::Wal* wal = agent_->wal();
  std::vector<wal::DeadLetter> dead;
  EXPECT_TRUE(wal->ScanDeadLetters(0, 1 << 20, &dead).ok());
  for (const auto& d : dead) dead_reason[d.seq] = d.reason;

  // The ledger, with the WAL's live entries counted by a scan, not by the counters.
  std::map<std::string, wal::Counts> live;
  EXPECT_TRUE(wal->CountLive(&live).ok());
  wal::Stats stats = wal->GetStats();
  for (const auto& [t, ts] : stats.topics) {
    uint64_t discarded = 0;
    for (const auto& [reason, c] : ts.discarded) discarded += c.count;
    EXPECT_EQ(ts.accepted.count, ts.delivered.count + discarded + live[t].count)
        << "ledger of topic " << t << ": accepted " << ts.accepted.count << ", delivered "
        << ts.delivered.count << ", discarded " << discarded << ", in the WAL " << live[t].count;
  }

  size_t want = 0;
  for (const auto& [seq, tv] : acked_) want += tv.first == topic;
  auto records = ReadTopic(kafka_->bootstrap(), topic, want - std::min(want, dead.size()),
                           std::chrono::seconds(30));
  std::map<uint64_t, std::string> in_kafka;
  for (const auto& r : records) in_kafka[r.seq] = r.value;
  for (const auto& [seq, tv] : acked_) {
    if (tv.first != topic) continue;
    bool delivered = in_kafka.count(seq) && in_kafka[seq] == tv.second;
    bool pending = false;
    if (!delivered && !dead_reason.count(seq)) {
      std::vector<wal::Entry> e;
      EXPECT_TRUE(wal->Scan(seq, 1, 1 << 20, &e).ok());
      pending = !e.empty() && e[0].seq == seq;
    }
    EXPECT_TRUE(delivered || dead_reason.count(seq) || pending)
        << "acked seq " << seq << " (" << tv.second << ") is neither in Kafka, nor in the "
        << "dead letters, nor still in the WAL";
  }
  return dead_reason;
}

}  // namespace kspool::testing
