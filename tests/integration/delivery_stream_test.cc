// The streams of delivery confirmation end to end: WatchDeliveries (every outcome once,
// in order, across a restart) and SendStream (many Sends on one stream, one bad).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/kafka_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::DevKafka;
using kspool::testing::WaitUntil;
using kspool::v1::DeliveryStatus;
using namespace std::chrono_literals;

class DeliveryStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<DevKafka>(dir_.path(), 3, std::vector<std::string>{"events:4"});
    StartAgent();
  }
  void StartAgent(std::vector<std::string> args = {}) {
    agent_ = std::make_unique<AgentProcess>(dir_.sub("wal"), dir_.sub("agent.log"),
                                            kafka_->bootstrap(), args);
  }
  std::vector<uint64_t> SendValues(int n, const std::string& prefix) {
    kspool::v1::SendRequest req;
    for (int i = 0; i < n; ++i) {
      auto* m = req.add_messages();
      m->set_topic("events");
      m->set_value(prefix + std::to_string(i));
    }
    kspool::v1::SendResponse resp;
    grpc::Status s = agent_->Send(req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.sequence().begin(), resp.sequence().end()};
  }
  // Follows WatchDeliveries from `from` until `want` statuses came or the stream ends.
  grpc::Status Watch(uint64_t from, size_t want, std::vector<DeliveryStatus>* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    kspool::v1::WatchDeliveriesRequest req;
    req.set_from_sequence(from);
    auto reader = agent_->spool().WatchDeliveries(&ctx, req);
    DeliveryStatus d;
    size_t got = 0;
    while (got < want && reader->Read(&d)) {
      out->push_back(d);
      ++got;
    }
    if (got == want) ctx.TryCancel();
    return reader->Finish();
  }

  kspool::testing::TempDir dir_;
  std::unique_ptr<DevKafka> kafka_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(DeliveryStreams, WatchFromOneGivesEveryOutcomeOnceInOrderAcrossARestart) {
  std::vector<uint64_t> acked;
  for (int b = 0; b < 4; ++b) {
    for (uint64_t s : SendValues(25, "a" + std::to_string(b) + "-")) acked.push_back(s);
  }
  std::vector<DeliveryStatus> seen;
  Watch(1, 60, &seen);
  ASSERT_EQ(seen.size(), 60u);
  // The agent dies; the watcher reconnects from the last sequence it saw, plus one.
  agent_->process().Signal(SIGKILL);
  ASSERT_TRUE(agent_->process().Wait(10s).has_value());
  StartAgent();
  for (int b = 0; b < 2; ++b) {
    for (uint64_t s : SendValues(25, "b" + std::to_string(b) + "-")) acked.push_back(s);
  }
  Watch(seen.back().sequence() + 1, acked.size() - seen.size(), &seen);
  ASSERT_EQ(seen.size(), acked.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].sequence(), acked[i]) << "every outcome once, in sequence order";
    EXPECT_EQ(seen[i].state(), DeliveryStatus::DELIVERED);
    EXPECT_GE(seen[i].offset(), 0);
  }
}

TEST_F(DeliveryStreams, AStalledWatcherHoldsBackOnlyItselfAndLosesNothing) {
  // Watcher A reads one outcome and then nothing for a while: gRPC's flow control holds
  // its stream; the agent reads the index for it no further.
  grpc::ClientContext stalled_ctx;
  stalled_ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  kspool::v1::WatchDeliveriesRequest req;
  req.set_from_sequence(1);
  auto stalled = agent_->spool().WatchDeliveries(&stalled_ctx, req);
  std::vector<uint64_t> acked;
  for (int b = 0; b < 20; ++b) {
    for (uint64_t s : SendValues(500, "w" + std::to_string(b) + "-")) acked.push_back(s);
  }
  DeliveryStatus d;
  ASSERT_TRUE(stalled->Read(&d));
  EXPECT_EQ(d.sequence(), acked.front());
  // Watcher B, meanwhile, gets everything.
  std::vector<DeliveryStatus> fresh;
  ASSERT_TRUE(Watch(1, acked.size(), &fresh).ok() || fresh.size() == acked.size());
  ASSERT_EQ(fresh.size(), acked.size());
  EXPECT_EQ(fresh.back().sequence(), acked.back());
  // A resumes and finds every outcome, in order, none lost while it stalled.
  for (size_t i = 1; i < acked.size(); ++i) {
    ASSERT_TRUE(stalled->Read(&d)) << i;
    ASSERT_EQ(d.sequence(), acked[i]);
  }
  stalled_ctx.TryCancel();
  stalled->Finish();
}

TEST_F(DeliveryStreams, WatchBelowWhatIsKeptIsOutOfRange) {
  agent_.reset();
  StartAgent({"--delivery-retention-bytes", "1"});  // keep (almost) nothing
  std::vector<uint64_t> seqs = SendValues(10, "x");
  ASSERT_TRUE(agent_->WaitUntilDrained(30s));
  std::vector<DeliveryStatus> seen;
  grpc::Status s;
  ASSERT_TRUE(WaitUntil(
      [&] {
        seen.clear();
        s = Watch(seqs.front(), seqs.size(), &seen);
        return s.error_code() == grpc::StatusCode::OUT_OF_RANGE;
      },
      10s))
      << s.error_message();
  EXPECT_NE(s.error_message().find("no longer"), std::string::npos) << s.error_message();
  // It names exactly the range missed, and a watch from after it goes on.
  static const std::regex kMissed(
      R"(the outcomes of sequence numbers (\d+)\.\.(\d+) are no longer kept \(the delivery index starts at (\d+)\))");
  std::smatch m;
  const std::string text = s.error_message();
  ASSERT_TRUE(std::regex_search(text, m, kMissed)) << text;
  EXPECT_EQ(std::stoull(m[1]), seqs.front());
  EXPECT_GE(std::stoull(m[2]), seqs.back()) << "all ten were forgotten";
  const uint64_t start = std::stoull(m[3]);
  EXPECT_EQ(start, std::stoull(m[2]) + 1);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 1500ms);
  kspool::v1::WatchDeliveriesRequest req;
  req.set_from_sequence(start);
  auto reader = agent_->spool().WatchDeliveries(&ctx, req);
  DeliveryStatus d;
  while (reader->Read(&d)) {
  }
  grpc::Status from_start = reader->Finish();
  EXPECT_EQ(from_start.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << "waits for new outcomes, not refused: " << from_start.error_message();
}

TEST_F(DeliveryStreams, SendStreamAnswersEachRequestInOrderAndABadOneInvalidArgument) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  auto stream = agent_->spool().SendStream(&ctx);
  constexpr int kRequests = 9, kBad = 4;
  for (int i = 0; i < kRequests; ++i) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic(i == kBad ? "" : "events");  // an empty topic is invalid
    m->set_value("s" + std::to_string(i));
    if (i % 2 == 1) req.set_wait_for(kspool::v1::WAIT_FOR_KAFKA);
    ASSERT_TRUE(stream->Write(req));
  }
  stream->WritesDone();
  uint64_t last_seq = 0;
  for (int i = 0; i < kRequests; ++i) {
    kspool::v1::SendResponse resp;
    ASSERT_TRUE(stream->Read(&resp)) << "response " << i;
    if (i == kBad) {
      EXPECT_EQ(resp.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_NE(resp.status().message().find("topic"), std::string::npos)
          << resp.status().message();
      EXPECT_EQ(resp.sequence_size(), 0);
      continue;
    }
    EXPECT_EQ(resp.status().code(), 0) << i << ": " << resp.status().message();
    ASSERT_EQ(resp.sequence_size(), 1);
    EXPECT_GT(resp.sequence(0), last_seq) << "answers come in request order";
    last_seq = resp.sequence(0);
    if (i % 2 == 1) {
      ASSERT_EQ(resp.deliveries_size(), 1);
      EXPECT_EQ(resp.deliveries(0).state(), DeliveryStatus::DELIVERED);
    }
  }
  grpc::Status s = stream->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(agent_->WaitUntilDrained(30s));
  EXPECT_EQ(kspool::testing::ReadTopic(kafka_->bootstrap(), "events", kRequests - 1, 30s).size(),
            static_cast<size_t>(kRequests - 1));
}

}  // namespace
}  // namespace kspool
