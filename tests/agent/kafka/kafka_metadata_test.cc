// KafkaMetadata against a cluster that cannot be reached: a request waits out its
// timeout, and Cancel() (at shutdown) ends the wait within one slice.
#include "agent/kafka/kafka_metadata.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace kspool::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A loopback port that refuses connections: bound, never listened on, held for the test.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    socklen_t len = sizeof(sa);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  }
  ~RefusingPort() { close(fd_); }
  const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::string address_;
};

class KafkaMetadataUnreachable : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = KafkaMetadata::Create(port_.address(), {});
    ASSERT_TRUE(m.ok()) << m.status();
    metadata_ = std::move(m).value();
  }
  RefusingPort port_;
  std::unique_ptr<KafkaMetadata> metadata_;
};

TEST_F(KafkaMetadataUnreachable, ARequestWaitsOutItsWholeTimeoutAcrossSlices) {
  const auto start = steady_clock::now();
  auto leaders = metadata_->PartitionLeaders("t", 2500);
  const auto took = steady_clock::now() - start;
  EXPECT_EQ(leaders.status().code(), absl::StatusCode::kUnavailable) << leaders.status();
  EXPECT_GE(took, milliseconds(2400)) << "asked again after a slice ran out";
  EXPECT_LT(took, milliseconds(10000));
}

TEST_F(KafkaMetadataUnreachable, CancelEndsAWaitWithinASlice) {
  absl::StatusOr<std::vector<bool>> leaders;
  steady_clock::time_point cancelled;
  std::thread asker([&] { leaders = metadata_->PartitionLeaders("t", 60000); });
  std::this_thread::sleep_for(milliseconds(300));
  cancelled = steady_clock::now();
  metadata_->Cancel();
  asker.join();
  const auto took = steady_clock::now() - cancelled;
  EXPECT_EQ(leaders.status().code(), absl::StatusCode::kUnavailable) << leaders.status();
  EXPECT_LT(took, milliseconds(KafkaMetadata::kSliceMs + 2000));
}

TEST_F(KafkaMetadataUnreachable, AfterCancelRequestsFailAtOnceNamingTheStop) {
  metadata_->Cancel();
  const auto start = steady_clock::now();
  auto count = metadata_->PartitionCount("t", 60000);
  EXPECT_LT(steady_clock::now() - start, milliseconds(500));
  EXPECT_EQ(count.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(count.status().message().find("stopping"), std::string::npos) << count.status();
}

}  // namespace
}  // namespace kspool::agent
