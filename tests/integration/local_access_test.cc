// Local access to a real agent process: the gRPC unix socket's file mode and group
// (--listen-mode, --listen-group), a client served over it, and the WAL directory's
// permissions (created 0700; a world-writable one refused at start, exit 2), and the
// caller's uid (SO_PEERCRED) as the identity --acl rules name.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::ChildProcess;
using kspool::testing::DevKafka;
using namespace std::chrono_literals;

class LocalAccess : public ::testing::Test {
 protected:
  std::unique_ptr<AgentProcess> Agent(const std::string& wal, std::vector<std::string> args) {
    return std::make_unique<AgentProcess>(wal, dir_.sub("agent.log"), kafka_.bootstrap(),
                                          std::move(args));
  }
  static mode_t ModeOf(const std::string& path, gid_t* gid = nullptr) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    if (gid) *gid = st.st_gid;
    return st.st_mode & 07777;
  }

  kspool::testing::TempDir dir_;
  DevKafka kafka_{dir_.path(), 1, {}};
};

TEST_F(LocalAccess, TheUnixSocketGetsListenModeAndGroupAndServesClients) {
  const struct group* own = getgrgid(getegid());
  ASSERT_NE(own, nullptr);
  const std::string sock = dir_.sub("grpc.sock");
  auto a = Agent(dir_.sub("wal"), {"--listen", "unix:" + sock, "--listen-mode", "0640",
                                   "--listen-group", own->gr_name});
  gid_t gid = 0;
  EXPECT_EQ(ModeOf(sock, &gid), 0640u);
  EXPECT_EQ(gid, getegid());
  EXPECT_EQ(a->WalStats().entries(), 0u);  // a plaintext gRPC client is served over it
}

TEST_F(LocalAccess, TheUnixSocketIs0660ByDefault) {
  const std::string sock = dir_.sub("grpc.sock");
  auto a = Agent(dir_.sub("wal"), {"--listen", "unix:" + sock});
  EXPECT_EQ(ModeOf(sock), 0660u);
}

TEST_F(LocalAccess, ANewWalDirectoryIsCreated0700WithItsParents) {
  const std::string wal = dir_.sub("volume/kspool/wal");
  auto a = Agent(wal, {});
  EXPECT_EQ(ModeOf(wal), 0700u);
}

TEST_F(LocalAccess, AWorldWritableWalDirectoryIsRefusedAtStart) {
  const std::string wal = dir_.sub("wal");
  ASSERT_EQ(mkdir(wal.c_str(), 0700), 0);
  ASSERT_EQ(chmod(wal.c_str(), 0777), 0);
  ChildProcess p({KSPOOL_AGENT_BIN, "--wal-dir", wal, "--kafka-brokers", kafka_.bootstrap(),
                  "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"},
                 dir_.sub("fail.log"));
  std::optional<int> status = p.Wait(30s);
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  std::ifstream in(dir_.sub("fail.log"));
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find(wal + " is world-writable (mode 0777)"), std::string::npos) << log.str();
  EXPECT_EQ(ModeOf(wal), 0777u);  // left as it was
}

TEST_F(LocalAccess, AUnixSocketClientIsIdentifiedByItsUidInTheAclRules) {
  const std::string uid = "uid:" + std::to_string(geteuid());
  const std::string acl = dir_.sub("acl.toml");
  std::ofstream(acl) << "[[allow]]\nidentity = \"" << uid << "\"\nsend = [\"mine\"]\nadmin = true\n"
                     << "[[allow]]\nidentity = \"uid:" << geteuid() + 1
                     << "\"\nsend = [\"other\"]\n";
  auto a = Agent(dir_.sub("wal"), {"--listen", "unix:" + dir_.sub("grpc.sock"), "--acl", acl});
  auto send = [&](const std::string& topic) {
    kspool::v1::SendRequest req;
    auto* m = req.add_messages();
    m->set_topic(topic);
    m->set_value("v");
    kspool::v1::SendResponse resp;
    return a->Send(req, &resp);
  };
  grpc::Status mine = send("mine");
  EXPECT_TRUE(mine.ok()) << mine.error_message();
  grpc::Status other = send("other");  // another uid's topic
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(other.error_message().find(uid), std::string::npos) << other.error_message();
  EXPECT_NE(other.error_message().find("other"), std::string::npos) << other.error_message();
  EXPECT_EQ(a->WalStats().appended_messages(), 1u);  // the admin right of this uid's rule
}

}  // namespace
}  // namespace kspool
