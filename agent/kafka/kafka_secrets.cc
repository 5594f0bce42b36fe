#include "agent/kafka/kafka_secrets.h"

#include <algorithm>
#include <cctype>

namespace kspool::agent {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

bool IsSecretKafkaProperty(std::string_view key) {
  const std::string k = Lower(key);
  // Named: these hold a secret without saying so by their suffix (the OAUTHBEARER
  // config holds a principal and may hold a signing key; a PEM key is the key itself).
  // sasl.jaas.config is Java's (librdkafka refuses it), but may hold a password.
  static const std::string_view kNamed[] = {"sasl.oauthbearer.config", "ssl.key.pem",
                                            "sasl.jaas.config"};
  for (std::string_view n : kNamed) {
    if (k == n) return true;
  }
  for (std::string_view tail : {"password", "secret", "token", "credentials"}) {
    if (EndsWith(k, tail)) return true;
  }
  return false;
}

std::string RedactKafkaOption(std::string_view option) {
  const size_t eq = option.find('=');
  if (eq == std::string_view::npos || !IsSecretKafkaProperty(option.substr(0, eq))) {
    return std::string(option);
  }
  return std::string(option.substr(0, eq + 1)) + std::string(kRedacted);
}

SecretScrubber::SecretScrubber(const std::vector<std::string>& options) {
  for (const std::string& kv : options) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || !IsSecretKafkaProperty(kv.substr(0, eq))) continue;
    if (eq + 1 < kv.size()) values_.push_back(kv.substr(eq + 1));
  }
  std::sort(values_.begin(), values_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::string SecretScrubber::Scrub(std::string_view text) const {
  std::string out(text);
  for (const std::string& v : values_) {
    for (size_t at = out.find(v); at != std::string::npos;
         at = out.find(v, at + kRedacted.size())) {
      out.replace(at, v.size(), kRedacted);
    }
  }
  return out;
}

}  // namespace kspool::agent
