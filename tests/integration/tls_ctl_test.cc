// kspoolctl against a TLS agent: the --tls-ca, --tls-cert and --tls-key flags, with a
// real kspool-agent process and the real kspoolctl binary. Also the agent's warning
// when it listens beyond loopback without TLS.
#include <gtest/gtest.h>

#include "tests/ctl/ctl_runner.h"
#include "tests/support/agent_process.h"
#include "tests/support/dev_kafka.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"
#include "tests/support/wait.h"

namespace kspool {
namespace {

using kspool::testing::AgentProcess;
using kspool::testing::CtlResult;
using kspool::testing::RunCtl;

class TlsCtl : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = std::make_unique<kspool::testing::DevKafka>(dir_.path(), 1,
                                                         std::vector<std::string>{"events:1"});
  }
  kspool::testing::TempDir dir_;
  kspool::testing::TestPki ca_{dir_.sub("pki"), "a"};
  kspool::testing::CertAndKey server_ = ca_.IssueLocalServer("server");
  kspool::testing::CertAndKey client_ =
      ca_.Issue("client", "operator", {"URI:spiffe://test/ns/a/sa/b"});
  std::unique_ptr<kspool::testing::DevKafka> kafka_;
};

TEST_F(TlsCtl, KspoolctlWithTlsFlagsReachesAnMtlsAgent) {
  AgentProcess agent(
      dir_.sub("wal"), dir_.sub("agent.log"), kafka_->bootstrap(),
      {"--tls-cert", server_.cert, "--tls-key", server_.key, "--tls-client-ca", ca_.ca_cert()});
  const std::vector<std::string> tls = {"--agent",    agent.address(), "--tls-ca",  ca_.ca_cert(),
                                        "--tls-cert", client_.cert,    "--tls-key", client_.key};
  std::vector<std::string> send = tls;
  send.insert(send.end(), {"send", "--topic", "events", "hello over mTLS"});
  CtlResult sent = RunCtl(send, dir_.path());
  EXPECT_EQ(sent.exit_code, 0) << sent.out << sent.err;
  std::vector<std::string> status = tls;
  status.insert(status.end(), {"--json", "status"});
  CtlResult st = RunCtl(status, dir_.path());
  EXPECT_EQ(st.exit_code, 0) << st.out << st.err;

  // Without a client certificate the handshake fails: an error, not a usage problem.
  CtlResult bare = RunCtl({"--agent", agent.address(), "--tls-ca", ca_.ca_cert(), "--timeout-ms",
                           "2000", "commit-point"},
                          dir_.path());
  EXPECT_EQ(bare.exit_code, 1) << bare.out << bare.err;
  EXPECT_NE(bare.err.find("UNAVAILABLE"), std::string::npos) << bare.err;
}

TEST_F(TlsCtl, CertificateWithoutKeyIsAUsageError) {
  CtlResult r = RunCtl({"--tls-cert", client_.cert, "commit-point"}, dir_.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--tls-key"), std::string::npos) << r.err;
}

TEST_F(TlsCtl, AgentListeningBeyondLoopbackWithoutTlsWarns) {
  AgentProcess agent(dir_.sub("wal"), dir_.sub("agent.log"), kafka_->bootstrap(),
                     {"--listen", "0.0.0.0:0"});
  EXPECT_NE(kspool::testing::ReadWholeFile(dir_.sub("agent.log"))
                .find("reachable from other hosts without TLS"),
            std::string::npos);
}

}  // namespace
}  // namespace kspool
