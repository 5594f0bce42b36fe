// Which librdkafka properties are secrets, and how their values are kept out of every
// output: the one definition used by --print-config, by the errors of a bad Kafka
// option, and by the librdkafka log and error callbacks (docs/SECURITY.md, "Kafka security").
// Thread safety: free functions are pure; a SecretScrubber is immutable once made, so
// any thread (librdkafka's included) may use it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kspool::agent {

inline constexpr std::string_view kRedacted = "[redacted]";

// sasl.oauthbearer.config, sasl.jaas.config and ssl.key.pem (a private key), and every property
// whose name ends in "password", "secret", "token" or "credentials", case-blind: sasl.password,
// ssl.key.password, ssl.keystore.password, sasl.oauthbearer.client.secret, ... Not
// secret: names and paths (sasl.username, ssl.key.location, ssl.ca.location).
bool IsSecretKafkaProperty(std::string_view key);

// "KEY=VALUE" as it may be shown: "KEY=[redacted]" for a secret KEY, else unchanged.
std::string RedactKafkaOption(std::string_view option);

// Replaces every occurrence of the values of the secret options among `options`
// (KEY=VALUE each) in a text with "[redacted]": the last line of defence for text that
// librdkafka wrote (its logs and error strings), which may quote a value.
class SecretScrubber {
 public:
  SecretScrubber() = default;
  explicit SecretScrubber(const std::vector<std::string>& options);
  std::string Scrub(std::string_view text) const;

 private:
  std::vector<std::string> values_;  // longest first, so a secret inside another goes too
};

}  // namespace kspool::agent
