// The discard report built on the commit point: R2 - R1 is exactly what happened to the
// messages received between the two commit points, also across an agent restart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/http_get.h"
#include "tests/support/spool_harness.h"

namespace kspool {
namespace {

using kspool::testing::SpoolHarness;
using namespace std::chrono_literals;

struct Count {
  uint64_t count = 0;
  int64_t earliest = 0, latest = 0;
};
// topic -> outcome -> counts, from a report's at_or_before section.
std::map<std::string, std::map<std::string, Count>> AtOrBefore(
    const kspool::v1::GetDiscardReportResponse& r) {
  std::map<std::string, std::map<std::string, Count>> out;
  for (const auto& t : r.topics()) {
    for (const auto& o : t.at_or_before()) {
      out[t.topic()][o.outcome()] = {o.count(), o.earliest_receive_ms(), o.latest_receive_ms()};
    }
  }
  return out;
}

class ReportTest : public ::testing::Test {
 protected:
  // Sends one message that the broker rejects as `error`; waits until it is discarded.
  int64_t SendDoomed(const std::string& topic, const std::string& error) {
    // A message refused as too large is sent again alone before it is discarded.
    const std::string times = error == "MSG_SIZE_TOO_LARGE" ? "2" : "1";
    EXPECT_EQ(h_.kafka().Command("request error Produce " + times + " " + error), "OK");
    auto r = h_.Send(topic, {"doomed"});
    EXPECT_TRUE(r.status.ok());
    EXPECT_TRUE(h_.WaitUntilDrained(30s));
    return r.receive_time_ms;
  }
  int64_t SendFine(const std::string& topic, int n) {
    int64_t last = 0;
    for (int i = 0; i < n; ++i) last = h_.Send(topic, {"fine" + std::to_string(i)}).receive_time_ms;
    EXPECT_TRUE(h_.WaitUntilDrained(30s));
    return last;
  }
  // The report once its commit point has passed `receive_ms`.
  kspool::v1::GetDiscardReportResponse ReportPast(int64_t receive_ms) {
    kspool::v1::GetDiscardReportResponse r;
    EXPECT_TRUE(h_.WaitUntil([&] {
      r = h_.Report();
      return r.commit_point_ms() >= receive_ms;
    }, 10s));
    return r;
  }

  SpoolHarness h_{{"t:2", "u:1"}};
};

TEST_F(ReportTest, DifferenceOfTwoReportsIsExactlyWhatHappenedBetweenAcrossARestart) {
  h_.Start();
  SendFine("t", 10);
  int64_t last = SendDoomed("t", "MSG_SIZE_TOO_LARGE");
  auto r1 = ReportPast(last);
  auto a1 = AtOrBefore(r1);
  EXPECT_EQ(a1["t"]["delivered"].count, 10u);
  EXPECT_EQ(a1["t"]["msg_size_too_large"].count, 1u);

  SendFine("t", 7);
  const int64_t doomed_t = SendDoomed("t", "MSG_SIZE_TOO_LARGE");
  h_.Stop();
  h_.Start();  // a restart between the two reports
  SendFine("t", 5);
  SendFine("u", 3);
  const int64_t doomed_u = SendDoomed("u", "INVALID_RECORD");
  auto r2 = ReportPast(doomed_u);
  auto a2 = AtOrBefore(r2);
  EXPECT_GT(r2.commit_point_ms(), r1.commit_point_ms());
  EXPECT_EQ(a2["t"]["delivered"].count - a1["t"]["delivered"].count, 12u);
  EXPECT_EQ(a2["t"]["msg_size_too_large"].count - a1["t"]["msg_size_too_large"].count, 1u);
  EXPECT_EQ(a2["u"]["delivered"].count - a1["u"]["delivered"].count, 3u);
  EXPECT_EQ(a2["u"]["invalid_record"].count, 1u);
  // Each discard reason keeps when its messages were received.
  EXPECT_EQ(a2["t"]["msg_size_too_large"].latest, doomed_t);
  EXPECT_EQ(a2["u"]["invalid_record"].earliest, doomed_u);
  for (const auto& t : r2.topics()) {
    EXPECT_EQ(t.accepted(), t.delivered() + t.discarded() + t.pending()) << t.topic();
  }
  // The same report as JSON on the metrics port.
  auto json = nlohmann::json::parse(
      kspool::testing::HttpGet(h_.agent().http_address(), "/discards").body);
  EXPECT_EQ(json["topics"]["u"]["at_or_before"]["invalid_record"]["count"], 1);
  EXPECT_TRUE(json["topics"]["t"]["ledger"]["holds"].get<bool>());
  h_.ExpectAllAccountedFor("t");
  h_.ExpectAllAccountedFor("u");
}

TEST_F(ReportTest, ADiscardNewerThanTheCommitPointShowsAtOnce) {
  h_.Start();
  // Partition 0 of t loses its leader: a message there holds the commit point back.
  ASSERT_EQ(h_.kafka().Command("leader t 0 none"), "OK");
  kspool::v1::SendRequest stuck;
  auto* m = stuck.add_messages();
  m->set_topic("t");
  m->set_partition(0);
  m->set_value("stuck");
  auto held = h_.SendRequest(stuck);
  ASSERT_TRUE(held.status.ok());
  // Refused twice: in its batch, then alone (only then is it too large).
  ASSERT_EQ(h_.kafka().Command("request error Produce 2 MSG_SIZE_TOO_LARGE"), "OK");
  auto doomed = h_.Send("u", {"doomed"});
  ASSERT_TRUE(doomed.status.ok());
  // Within the drain's settle delay (tens of ms), not when the commit point passes it.
  kspool::v1::GetDiscardReportResponse r;
  ASSERT_TRUE(h_.WaitUntil([&] {
    r = h_.Report();
    for (const auto& t : r.topics()) {
      if (t.topic() == "u" && t.after_size() > 0) return true;
    }
    return false;
  }, 20s));
  EXPECT_LT(r.commit_point_ms(), held.receive_time_ms);
  bool seen = false;
  for (const auto& t : r.topics()) {
    if (t.topic() != "u") continue;
    for (const auto& o : t.after()) {
      if (o.outcome() == "msg_size_too_large") {
        seen = true;
        EXPECT_EQ(o.count(), 1u);
        EXPECT_EQ(o.earliest_receive_ms(), doomed.receive_time_ms);
      }
    }
    EXPECT_EQ(t.at_or_before_size(), 0) << "the commit point has not passed it yet";
  }
  EXPECT_TRUE(seen) << "a discard newer than the commit point shows at once";
  ASSERT_EQ(h_.kafka().Command("leader t 0 1"), "OK");
  ASSERT_TRUE(h_.WaitUntilDrained(30s));
  h_.ExpectAllAccountedFor("t");
  h_.ExpectAllAccountedFor("u");
}

}  // namespace
}  // namespace kspool
