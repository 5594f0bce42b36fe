// AccessControl on a hand-set clock: refusals name the identity and the topic and are
// counted under bounded labels; quotas per identity, with a retry hint; reloads that
// work, reloads that do not, and the watcher that notices a changed file.
#include "agent/security/access_control.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "agent/security/acl_reloader.h"
#include "tests/support/temp_dir.h"

namespace kspool::agent {
namespace {

constexpr char kRules[] = R"(
[[allow]]
identity = "cn:slow"
send = ["orders", "orders.*"]
messages_per_second = 1000

[[allow]]
identity = "cn:fast"
send = ["orders"]
messages_per_second = 1_000_000

[[allow]]
identity = "cn:ops"
admin = true

[[allow]]
identity = "*"
send = ["public"]
messages_per_second = 10
)";

class AccessControlTest : public ::testing::Test {
 protected:
  AccessControlTest() {
    Write(kRules);
    access_ =
        std::make_unique<AccessControl>(LoadAclFile(path_).value(), path_, &metrics_, &clock_);
  }
  void Write(const std::string& text) {
    // Beside, then renamed over: a new inode, as editors and config maps do.
    std::ofstream(path_ + ".new") << text;
    std::rename((path_ + ".new").c_str(), path_.c_str());
  }
  absl::Status Topics(const std::vector<std::string>& ids, const std::vector<std::string>& topics) {
    return access_->CheckTopics(
        access_->For(ids), topics.size(),
        [&](size_t i) { return std::string_view(topics[i]); }, "message");
  }
  absl::Status Charge(const std::vector<std::string>& ids, uint64_t n, int64_t* retry = nullptr) {
    int64_t r = -1;
    absl::Status s = access_->ChargeQuota(access_->For(ids), n, n * 100, &r);
    if (retry) *retry = r;
    return s;
  }
  bool MetricsHave(const std::string& line) {
    return metrics_.Serialize().find(line) != std::string::npos;
  }

  kspool::testing::TempDir dir_;
  std::string path_ = dir_.sub("acl.toml");
  ManualClock clock_{1'700'000'000'000};
  Metrics metrics_{"test"};
  std::unique_ptr<AccessControl> access_;
};

TEST_F(AccessControlTest, DeniedTopicNamesTheIdentityAndTheFirstForbiddenTopic) {
  EXPECT_TRUE(Topics({"cn:slow"}, {"orders", "orders.eu", "orders"}).ok());
  absl::Status s = Topics({"cn:slow", "dns:slow.local"}, {"orders", "orders", "payments", "audit"});
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "identity cn:slow, dns:slow.local may not send to topic \"payments\" "
            "(message 2; see --acl " +
                path_ + ")");
  EXPECT_TRUE(MetricsHave("kspool_acl_denied_total{identity=\"cn:slow\"} 1"));
}

TEST_F(AccessControlTest, IdentitiesTheFileDoesNotNameShareOneLabel) {
  EXPECT_FALSE(Topics({"cn:stranger"}, {"orders"}).ok());
  EXPECT_FALSE(Topics({"anonymous"}, {"orders"}).ok());
  EXPECT_TRUE(Topics({"anonymous"}, {"public"}).ok()) << "the \"*\" rule";
  EXPECT_TRUE(MetricsHave("kspool_acl_denied_total{identity=\"other\"} 2"));
}

TEST_F(AccessControlTest, AdminNeedsTheAdminRight) {
  const std::vector<std::string> ops = {"cn:ops"}, slow = {"cn:slow"};
  EXPECT_TRUE(access_->CheckAdmin(access_->For(ops), "GetWalStats").ok());
  absl::Status s = access_->CheckAdmin(access_->For(slow), "GetWalStats");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "identity cn:slow may not call GetWalStats (it needs admin = true in "
            "--acl " +
                path_ + ")");
}

TEST_F(AccessControlTest, QuotaRefusesBeyondTheRateWithARetryHintAndOthersAreUnaffected) {
  ASSERT_TRUE(Charge({"cn:slow"}, 1000).ok()) << "the burst: one second of the rate";
  int64_t retry = -1;
  absl::Status s = Charge({"cn:slow"}, 100, &retry);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(retry, 100) << "100 messages at 1000/s";
  EXPECT_NE(s.message().find("over its quota (1000 messages/s"), std::string::npos) << s;
  EXPECT_TRUE(MetricsHave("kspool_quota_refused_total{identity=\"cn:slow\"} 1"));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Charge({"cn:fast"}, 10'000).ok()) << "its own bucket";
  clock_.Advance(100);
  EXPECT_TRUE(Charge({"cn:slow"}, 100).ok()) << "after the hinted wait";
}

TEST_F(AccessControlTest, StarQuotaIsABucketPerCaller) {
  ASSERT_TRUE(Charge({"cn:a"}, 10).ok());
  EXPECT_FALSE(Charge({"cn:a"}, 1).ok());
  EXPECT_TRUE(Charge({"cn:b"}, 10).ok()) << "cn:b has its own bucket";
  EXPECT_TRUE(MetricsHave("kspool_quota_refused_total{identity=\"other\"} 1"));
}

TEST_F(AccessControlTest, StarQuotaBucketsAreBoundedIdleOnesEvictedBusyOnesShareOne) {
  for (size_t i = 0; i < AccessControl::kMaxCallerBuckets; ++i) {
    ASSERT_TRUE(Charge({"cn:c" + std::to_string(i)}, 10).ok());
  }
  // All busy: a newcomer is charged to the shared bucket, which a second one then finds
  // used up.
  EXPECT_TRUE(Charge({"cn:new1"}, 10).ok());
  EXPECT_FALSE(Charge({"cn:new2"}, 10).ok());
  // Once they are idle (full again), newcomers get buckets of their own.
  clock_.Advance(1000);
  EXPECT_TRUE(Charge({"cn:new3"}, 10).ok());
  EXPECT_FALSE(Charge({"cn:new3"}, 10).ok());
  EXPECT_TRUE(Charge({"cn:new4"}, 10).ok());
}

TEST_F(AccessControlTest, ReloadReplacesTheRules) {
  ASSERT_FALSE(Topics({"cn:fast"}, {"payments"}).ok());
  Write("[[allow]]\nidentity = \"cn:fast\"\nsend = [\"payments\"]\n");
  ASSERT_TRUE(access_->Reload().ok());
  EXPECT_TRUE(Topics({"cn:fast"}, {"payments"}).ok());
  EXPECT_FALSE(Topics({"cn:fast"}, {"orders"}).ok());
  EXPECT_TRUE(MetricsHave("kspool_acl_rules 1"));
}

TEST_F(AccessControlTest, InvalidReplacementKeepsTheRulesInForceAndIsCounted) {
  Write("[[allow]]\nidentity = \"cn:fast\"\nsend = [\"pay*ments\"]\n");
  absl::Status s = access_->Reload();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Topics({"cn:fast"}, {"orders"}).ok());
  EXPECT_TRUE(MetricsHave("kspool_degraded_events_total{event=\"acl_reload_failed\"} 1"));
  EXPECT_TRUE(MetricsHave("kspool_acl_rules 4"));
}

TEST_F(AccessControlTest, ReloadCallsItsSubscribersWithTheNewRulesInForceUntilUnsubscribed) {
  int calls = 0;
  bool ops_admin = true;
  AccessControl::Subscription sub = access_->OnReload([&] {
    ++calls;
    ops_admin = access_->For({"cn:ops"}).admin();
  });
  Write("[[allow]]\nidentity = \"cn:ops\"\nsend = [\"orders\"]\n");
  ASSERT_TRUE(access_->Reload().ok());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(ops_admin) << "the callback sees the new rules";
  Write("[[allow]]\nidentity = \"cn:fast\"\nsend = [\"pay*ments\"]\n");
  EXPECT_FALSE(access_->Reload().ok());
  EXPECT_EQ(calls, 1) << "an unusable file changes nothing";
  AccessControl::Subscription moved = std::move(sub);
  Write(kRules);
  ASSERT_TRUE(access_->Reload().ok());
  EXPECT_EQ(calls, 2) << "a moved subscription stays";
  EXPECT_TRUE(ops_admin);
  moved = AccessControl::Subscription();
  ASSERT_TRUE(access_->Reload().ok());
  EXPECT_EQ(calls, 2) << "not called once it is gone";
}

TEST_F(AccessControlTest, QuotaBucketsSurviveAReloadThatKeepsTheirRates) {
  ASSERT_TRUE(Charge({"cn:slow"}, 1000).ok());
  ASSERT_TRUE(access_->Reload().ok());  // the same file
  EXPECT_FALSE(Charge({"cn:slow"}, 100).ok()) << "a reload is no way around a quota";
  Write(std::string(kRules).replace(std::string(kRules).find("1000"), 4, "5000"));
  ASSERT_TRUE(access_->Reload().ok());
  EXPECT_TRUE(Charge({"cn:slow"}, 5000).ok()) << "a new rate: a new, full bucket";
}

TEST_F(AccessControlTest, ReloaderNoticesAChangedFile) {
  AclReloader reloader(access_.get(), AclFileFingerprint(path_), std::chrono::milliseconds(20));
  Write("[[allow]]\nidentity = \"cn:fast\"\nsend = [\"payments\"]\n");
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    seen = Topics({"cn:fast"}, {"payments"}).ok();
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace kspool::agent
