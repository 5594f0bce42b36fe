// Secrets given to the librdkafka producer stay out of its errors and of the agent's log,
// librdkafka's own debug output included. No broker is needed.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "agent/kafka/kafka_producer.h"

namespace kspool::agent {
namespace {

constexpr char kSecret[] = "Secret-Value-8c1f";

// Captures the default logger's output, at every level, while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST(KafkaSecretsProducer, RefusedOptionsAreNamedWithoutTheirSecretValue) {
  const std::string s = kSecret;
  const std::vector<std::vector<std::string>> cases = {
      // refused by rd_kafka_conf_set (Java's property)
      {"sasl.jaas.config=PlainLoginModule required username=\"u\" password=\"" + s + "\";"},
      // refused by rd_kafka_new (not a PEM key)
      {"security.protocol=SSL", "ssl.key.pem=" + s},
      // a bad non-secret value next to a secret
      {"sasl.password=" + s, "security.protocol=" + s}};
  for (const auto& options : cases) {
    absl::Status st = KafkaProducer::CheckOptions(options);
    ASSERT_FALSE(st.ok()) << options.back();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message().find(s), std::string::npos) << st;
  }
  // The non-secret bad value is named with its option, the secret is not shown at all.
  absl::Status sasl = KafkaProducer::CheckOptions({"sasl.jaas.config=x" + s});
  EXPECT_NE(sasl.message().find("sasl.jaas.config=[redacted]"), std::string::npos) << sasl;
  absl::Status proto = KafkaProducer::CheckOptions({"security.protocol=bogus"});
  EXPECT_NE(proto.message().find("security.protocol"), std::string::npos) << proto;
}

TEST(KafkaSecretsProducer, SaslAndTlsSettingsPassThroughUnchanged) {
  EXPECT_TRUE(KafkaProducer::CheckOptions({"security.protocol=SASL_PLAINTEXT",
                                           "sasl.mechanism=SCRAM-SHA-512", "sasl.username=u",
                                           "sasl.password=p"})
                  .ok());
  absl::Status missing = KafkaProducer::CheckOptions(
      {"security.protocol=SASL_SSL", "sasl.mechanism=PLAIN", "sasl.username=u", "sasl.password=p",
       "ssl.ca.location=/nonexistent/ca.pem"});
  EXPECT_NE(missing.message().find("ssl.ca.location"), std::string::npos) << missing;
}

TEST(KafkaSecretsProducer, DebugConfigurationDumpShowsNoSecret) {
  LogCapture log;
  {
    ProducerConfig pc;
    pc.brokers = "127.0.0.1:1";
    pc.agent_id = "0123456789abcdef";
    pc.options = {"debug=conf", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
                  "sasl.username=u", std::string("sasl.password=") + kSecret};
    auto p = KafkaProducer::Create(pc);
    ASSERT_TRUE(p.ok()) << p.status();
  }
  // The dump is there (so this looked at librdkafka's debug output), its secret is not.
  EXPECT_NE(log.text().find("sasl.mechanisms = PLAIN"), std::string::npos) << log.text();
  EXPECT_EQ(log.text().find(kSecret), std::string::npos) << log.text();
}

TEST(KafkaSecretsProducer, LibrdkafkaLinesQuotingASecretAreScrubbed) {
  LogCapture log;
  SecretScrubber scrubber({std::string("sasl.password=") + kSecret, "sasl.username=u"});
  LogLibrdkafkaLine(scrubber, 7, "SASL", (std::string("token ") + kSecret + " for u").c_str());
  LogLibrdkafkaLine(scrubber, 3, "FAIL", (std::string("err ") + kSecret).c_str());
  EXPECT_NE(log.text().find("librdkafka SASL: token [redacted] for u"), std::string::npos)
      << log.text();
  EXPECT_NE(log.text().find("librdkafka FAIL: err [redacted]"), std::string::npos) << log.text();
  EXPECT_EQ(log.text().find(kSecret), std::string::npos) << log.text();
}

}  // namespace
}  // namespace kspool::agent
