// Local access to a real agent process: the gRPC unix socket's file mode and group
// (--listen-mode, --listen-group), a client served over it, and the WAL directory's
// permissions (created 0700; a world-writable one refused at start, exit 2).
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace kspool
