// Tests for kspool-devkafka's FaultCommands against an in-process librdkafka mock cluster.
#include "tools/devkafka/fault_commands.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

namespace kspool::devkafka {
namespace {

// Reply checks that print the whole reply on failure (plain gtest, no gmock).
::testing::AssertionResult StartsWith(const std::string& reply, const std::string& prefix) {
  if (reply.compare(0, prefix.size(), prefix) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "reply '" << reply << "' does not start with '" << prefix << "'";
}

::testing::AssertionResult HasSubstr(const std::string& reply, const std::string& part) {
  if (reply.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "reply '" << reply << "' does not contain '" << part << "'";
}

constexpr int kBrokers = 3;

rd_kafka_t* NewProducer(const char* bootstrap) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  if (bootstrap != nullptr) {
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof(errstr));
    rd_kafka_conf_set(conf, "message.timeout.ms", "5000", errstr, sizeof(errstr));
    // Each message's opaque points at where its delivery result goes.
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void*) {
      *static_cast<rd_kafka_resp_err_t*>(m->_private) = m->err;
    });
  }
  return rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
}

class FaultCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rk_ = NewProducer(nullptr);
    ASSERT_NE(rk_, nullptr);
    mcluster_ = rd_kafka_mock_cluster_new(rk_, kBrokers);
    ASSERT_NE(mcluster_, nullptr);
    commands_ = std::make_unique<FaultCommands>(mcluster_, kBrokers);
  }

  void TearDown() override {
    if (client_ != nullptr) rd_kafka_destroy(client_);
    commands_.reset();
    if (mcluster_ != nullptr) rd_kafka_mock_cluster_destroy(mcluster_);
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }

  // Runs one command; every non-empty reply must be a single line.
  std::string Run(const std::string& line) {
    const std::string reply = commands_->Execute(line);
    EXPECT_EQ(reply.find('\n'), std::string::npos) << reply;
    return reply;
  }

  // A client of the mock cluster, to observe the effect of commands.
  rd_kafka_t* Client() {
    if (client_ == nullptr) client_ = NewProducer(rd_kafka_mock_cluster_bootstraps(mcluster_));
    return client_;
  }

  // Metadata for one topic as seen by the client: error and leader of partition 0.
  rd_kafka_resp_err_t TopicMetadata(const char* topic, int timeout_ms, int* partitions,
                                    int* leader0, rd_kafka_resp_err_t* topic_err) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(Client(), topic, nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(Client(), 0, rkt, &md, timeout_ms);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const rd_kafka_metadata_topic_t& t = md->topics[0];
      *topic_err = t.err;
      *partitions = t.partition_cnt;
      *leader0 = t.partition_cnt > 0 ? t.partitions[0].leader : -2;
      rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(rkt);
    return err;
  }

  rd_kafka_t* rk_ = nullptr;
  rd_kafka_t* client_ = nullptr;
  rd_kafka_mock_cluster_t* mcluster_ = nullptr;
  std::unique_ptr<FaultCommands> commands_;
};

TEST_F(FaultCommandsTest, PingHelpBlankAndComments) {
  EXPECT_EQ(Run("ping"), "OK pong");
  EXPECT_EQ(Run("  PING \r"), "OK pong");
  EXPECT_TRUE(StartsWith(Run("help"), "OK "));
  EXPECT_EQ(Run(""), "");
  EXPECT_EQ(Run("   "), "");
  EXPECT_EQ(Run("# broker down all"), "");
  EXPECT_EQ(Run("ping extra"), "ERR usage: ping");
}

TEST_F(FaultCommandsTest, UnknownCommandIsNamed) {
  EXPECT_EQ(Run("explode now"), "ERR unknown command 'explode' (try: help)");
  EXPECT_TRUE(HasSubstr(Run("broker sideways 1"), "unknown broker subcommand 'sideways'"));
  EXPECT_TRUE(HasSubstr(Run("topic delete t"), "unknown topic subcommand 'delete'"));
  EXPECT_TRUE(HasSubstr(Run("request retry 0"), "unknown request subcommand 'retry'"));
}

TEST_F(FaultCommandsTest, BrokerDownUpAndRtt) {
  EXPECT_EQ(Run("broker down 1"), "OK");
  EXPECT_EQ(Run("broker up 1"), "OK");
  EXPECT_EQ(Run("broker down all"), "OK");
  EXPECT_EQ(Run("broker up ALL"), "OK");
  EXPECT_EQ(Run("broker rtt 2 250"), "OK");
  EXPECT_EQ(Run("broker rtt all 0"), "OK");
}

TEST_F(FaultCommandsTest, BadBrokerIdsAreRejected) {
  EXPECT_EQ(Run("broker down x"), "ERR bad broker id 'x' (expected 1..3 or all)");
  EXPECT_EQ(Run("broker down 4"), "ERR broker id 4 out of range 1..3");
  EXPECT_EQ(Run("broker up 0"), "ERR broker id 0 out of range 1..3");
  EXPECT_EQ(Run("broker up -1"), "ERR broker id -1 out of range 1..3");
  EXPECT_EQ(Run("broker down 99999999999"),
            "ERR bad broker id '99999999999' (expected 1..3 or all)");
  EXPECT_EQ(Run("broker down"), "ERR usage: broker down ID|all");
  EXPECT_EQ(Run("broker down 1 2"), "ERR usage: broker down ID|all");
  EXPECT_EQ(Run("broker rtt 1"), "ERR usage: broker rtt ID|all MS");
  EXPECT_TRUE(StartsWith(Run("broker rtt 1 -5"), "ERR bad rtt '-5'"));
  EXPECT_TRUE(StartsWith(Run("broker rtt 1 fast"), "ERR bad rtt 'fast'"));
  EXPECT_TRUE(StartsWith(Run("broker rtt 9 10"), "ERR broker id 9 out of range"));
}

TEST_F(FaultCommandsTest, TopicCreate) {
  EXPECT_EQ(Run("topic create orders 4"), "OK");
  EXPECT_TRUE(StartsWith(Run("topic create orders 4"), "ERR TOPIC_ALREADY_EXISTS"));
  EXPECT_EQ(Run("topic create bad/name 3"), "ERR bad topic name 'bad/name'");
  EXPECT_EQ(Run("topic create .. 3"), "ERR bad topic name '..'");
  EXPECT_TRUE(StartsWith(Run("topic create other 0"), "ERR bad partition count '0'"));
  EXPECT_TRUE(StartsWith(Run("topic create other many"), "ERR bad partition count 'many'"));
  EXPECT_EQ(Run("topic create other"), "ERR usage: topic create NAME PARTITIONS");
}

TEST_F(FaultCommandsTest, TopicError) {
  EXPECT_EQ(Run("topic create t 2"), "OK");
  EXPECT_EQ(Run("topic error t TOPIC_AUTHORIZATION_FAILED"), "OK");
  EXPECT_EQ(Run("topic error t NO_ERROR"), "OK");
  EXPECT_EQ(Run("topic error t BOGUS_ERR"), "ERR unknown error name BOGUS_ERR");
  EXPECT_EQ(Run("topic error t"), "ERR usage: topic error NAME ERRNAME");
}

TEST_F(FaultCommandsTest, RequestErrors) {
  EXPECT_EQ(Run("request error Produce 2 NOT_LEADER_OR_FOLLOWER"), "OK");
  EXPECT_EQ(Run("request error 0 2 REQUEST_TIMED_OUT INVALID_RECORD"), "OK");
  EXPECT_EQ(Run("request error initproducerid 1 _TRANSPORT"), "OK");
  EXPECT_EQ(Run("request clear Produce"), "OK");
  EXPECT_EQ(Run("request clear 22"), "OK");
  EXPECT_EQ(Run("request error Produce 3 NOT_LEADER_FOR_PARTITION NOPE"),
            "ERR unknown error name NOPE");
  EXPECT_EQ(Run("request error Produce 3 REQUEST_TIMED_OUT INVALID_RECORD"),
            "ERR count 3 does not match 2 error names");
  EXPECT_EQ(Run("request error Nope 1 NO_ERROR"), "ERR unknown api key 'Nope'");
  EXPECT_EQ(Run("request clear -1"), "ERR unknown api key '-1'");
  EXPECT_TRUE(StartsWith(Run("request error Produce 0 NO_ERROR"), "ERR bad count '0'"));
  EXPECT_TRUE(StartsWith(Run("request error Produce 1"), "ERR usage: request error"));
  EXPECT_EQ(Run("request clear"), "ERR usage: request clear APIKEY");
}

TEST_F(FaultCommandsTest, Leader) {
  EXPECT_EQ(Run("topic create t 2"), "OK");
  EXPECT_EQ(Run("leader t 0 2"), "OK");
  EXPECT_EQ(Run("leader t 1 none"), "OK");
  EXPECT_EQ(Run("leader t 0 4"), "ERR broker id 4 out of range 1..3");
  EXPECT_EQ(Run("leader t 0 all"), "ERR bad broker id 'all' (expected 1..3)");
  EXPECT_TRUE(StartsWith(Run("leader t -1 1"), "ERR bad partition '-1'"));
  EXPECT_TRUE(StartsWith(Run("leader t 5 1"), "ERR UNKNOWN_TOPIC_OR_PART"));
  EXPECT_EQ(Run("leader t 0"), "ERR usage: leader TOPIC PARTITION ID|none");
}

TEST_F(FaultCommandsTest, ShutdownAndClose) {
  EXPECT_FALSE(commands_->shutdown_requested());
  EXPECT_EQ(Run("shutdown now"), "ERR usage: shutdown");
  EXPECT_FALSE(commands_->shutdown_requested());
  EXPECT_EQ(Run("shutdown"), "OK");
  EXPECT_TRUE(commands_->shutdown_requested());
  commands_->Close();
  EXPECT_EQ(Run("ping"), "ERR shutting down");
}

TEST(FaultCommandsParseTest, ErrorNames) {
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  const std::pair<const char*, rd_kafka_resp_err_t> cases[] = {
      {"NOT_LEADER_FOR_PARTITION", RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION},
      {"NOT_LEADER_OR_FOLLOWER", RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION},
      {"not_leader_or_follower", RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION},
      {"REQUEST_TIMED_OUT", RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT},
      {"MSG_SIZE_TOO_LARGE", RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE},
      {"INVALID_RECORD", RD_KAFKA_RESP_ERR_INVALID_RECORD},
      {"TOPIC_AUTHORIZATION_FAILED", RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED},
      {"UNKNOWN_TOPIC_OR_PART", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART},
      {"RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART},
      {"NO_ERROR", RD_KAFKA_RESP_ERR_NO_ERROR},
      {"_TRANSPORT", RD_KAFKA_RESP_ERR__TRANSPORT},
      {"6", RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION},
      {"-195", RD_KAFKA_RESP_ERR__TRANSPORT},
      {"0", RD_KAFKA_RESP_ERR_NO_ERROR},
  };
  for (const auto& [name, want] : cases) {
    err = static_cast<rd_kafka_resp_err_t>(12345);
    EXPECT_TRUE(FaultCommands::ParseErrorName(name, &err)) << name;
    EXPECT_EQ(err, want) << name;
  }
  for (const char* bad : {"", "BOGUS", "12345", "6x", "-", "_BEGIN", "_END", "NOT LEADER"}) {
    EXPECT_FALSE(FaultCommands::ParseErrorName(bad, &err)) << bad;
  }
}

TEST(FaultCommandsParseTest, ApiKeysAndTopicNames) {
  int16_t key = -1;
  const std::pair<const char*, int16_t> cases[] = {
      {"Produce", 0},          {"fetch", 1},           {"ListOffsets", 2}, {"METADATA", 3},
      {"FindCoordinator", 10}, {"InitProducerId", 22}, {"17", 17},
  };
  for (const auto& [name, want] : cases) {
    EXPECT_TRUE(FaultCommands::ParseApiKey(name, &key)) << name;
    EXPECT_EQ(key, want) << name;
  }
  for (const char* bad : {"", "Produc", "-1", "40000", "0x1"}) {
    EXPECT_FALSE(FaultCommands::ParseApiKey(bad, &key)) << bad;
  }
  EXPECT_TRUE(FaultCommands::IsValidTopicName("a.b_c-D9"));
  EXPECT_TRUE(FaultCommands::IsValidTopicName(std::string(249, 'x')));
  EXPECT_FALSE(FaultCommands::IsValidTopicName(std::string(250, 'x')));
  for (const char* bad : {"", ".", "..", "a b", "a/b", "a:b", "ü"}) {
    EXPECT_FALSE(FaultCommands::IsValidTopicName(bad)) << bad;
  }
}

// The commands reach the cluster: a client sees their effect.
TEST_F(FaultCommandsTest, ClientSeesTopicLeaderAndTopicError) {
  ASSERT_EQ(Run("topic create seen 5"), "OK");
  ASSERT_EQ(Run("leader seen 0 2"), "OK");
  int partitions = 0, leader0 = 0;
  rd_kafka_resp_err_t topic_err = RD_KAFKA_RESP_ERR_NO_ERROR;
  ASSERT_EQ(TopicMetadata("seen", 10000, &partitions, &leader0, &topic_err), 0);
  EXPECT_EQ(partitions, 5);
  EXPECT_EQ(leader0, 2);
  EXPECT_EQ(topic_err, RD_KAFKA_RESP_ERR_NO_ERROR);

  ASSERT_EQ(Run("topic error seen TOPIC_AUTHORIZATION_FAILED"), "OK");
  ASSERT_EQ(TopicMetadata("seen", 10000, &partitions, &leader0, &topic_err), 0);
  EXPECT_EQ(topic_err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
}

TEST_F(FaultCommandsTest, ClientSeesBrokersDownAndUp) {
  ASSERT_EQ(Run("topic create updown 1"), "OK");
  int partitions = 0, leader0 = 0;
  rd_kafka_resp_err_t topic_err = RD_KAFKA_RESP_ERR_NO_ERROR;
  ASSERT_EQ(TopicMetadata("updown", 10000, &partitions, &leader0, &topic_err), 0);
  ASSERT_EQ(Run("broker down all"), "OK");
  EXPECT_NE(TopicMetadata("updown", 1000, &partitions, &leader0, &topic_err), 0);
  ASSERT_EQ(Run("broker up all"), "OK");
  EXPECT_EQ(TopicMetadata("updown", 15000, &partitions, &leader0, &topic_err), 0);
}

TEST_F(FaultCommandsTest, ClientSeesInjectedProduceError) {
  ASSERT_EQ(Run("topic create produced 1"), "OK");
  ASSERT_EQ(Run("request error Produce 1 MSG_SIZE_TOO_LARGE"), "OK");
  rd_kafka_resp_err_t delivery = static_cast<rd_kafka_resp_err_t>(12345);
  rd_kafka_t* producer = Client();
  char value[] = "v";
  ASSERT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("produced"), RD_KAFKA_V_VALUE(value, 1),
                              RD_KAFKA_V_OPAQUE(&delivery),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_flush(producer, 10000);
  EXPECT_EQ(delivery, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);

  ASSERT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("produced"), RD_KAFKA_V_VALUE(value, 1),
                              RD_KAFKA_V_OPAQUE(&delivery),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_flush(producer, 10000);
  EXPECT_EQ(delivery, RD_KAFKA_RESP_ERR_NO_ERROR);
}

}  // namespace
}  // namespace kspool::devkafka
