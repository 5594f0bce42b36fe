// Which librdkafka properties are secrets, and how their values are kept out of text.
#include "agent/kafka/kafka_secrets.h"

#include <gtest/gtest.h>

namespace kspool::agent {
namespace {

TEST(KafkaSecrets, PasswordsSecretsAndKeysAreSecret) {
  for (const char* key :
       {"sasl.password", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
        "ssl.key.password", "ssl.keystore.password", "ssl.key.pem", "sasl.jaas.config",
        "SASL.Password", "some.future.access.token", "x.credentials"}) {
    EXPECT_TRUE(IsSecretKafkaProperty(key)) << key;
  }
}

TEST(KafkaSecrets, NamesPathsAndPublicCertificatesAreNotSecret) {
  for (const char* key :
       {"sasl.username", "sasl.mechanism", "security.protocol", "ssl.ca.location",
        "ssl.key.location", "ssl.certificate.pem", "ssl.ca.pem", "linger.ms", "debug"}) {
    EXPECT_FALSE(IsSecretKafkaProperty(key)) << key;
  }
}

TEST(KafkaSecrets, RedactKeepsTheKeyAndHidesOnlySecretValues) {
  EXPECT_EQ(RedactKafkaOption("sasl.password=hunter2=x"), "sasl.password=[redacted]");
  EXPECT_EQ(RedactKafkaOption("sasl.username=alice"), "sasl.username=alice");
  EXPECT_EQ(RedactKafkaOption("not an option"), "not an option");
}

TEST(KafkaSecrets, ScrubberReplacesEveryOccurrenceOfEverySecretValue) {
  SecretScrubber s(
      {"sasl.username=alice", "sasl.password=pw-1", "ssl.key.password=pw-1-longer", "linger.ms=5"});
  EXPECT_EQ(s.Scrub("user alice pw pw-1, again pw-1; key pw-1-longer; linger 5"),
            "user alice pw [redacted], again [redacted]; key [redacted]; linger 5");
}

TEST(KafkaSecrets, ScrubberWithoutSecretsChangesNothing) {
  SecretScrubber s({"linger.ms=5", "sasl.password="});
  EXPECT_EQ(s.Scrub("linger.ms=5 sasl.password="), "linger.ms=5 sasl.password=");
}

}  // namespace
}  // namespace kspool::agent
