#include "agent/kafka_options.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace kspool::agent {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Fixed {
  std::vector<std::string> names;  // the property and its librdkafka aliases
  std::vector<std::string> same;   // values librdkafka reads as the required one
  std::string required;
  std::string why;
};

const std::vector<Fixed>& FixedProperties() {
  static const std::vector<Fixed> kFixed = {
      {{"acks", "request.required.acks"},
       {"all", "-1"},
       "all (or -1)",
       "an entry leaves the WAL once Kafka acknowledges it, and only acks=all means every "
       "in-sync replica has it"},
      {{"enable.idempotence"},
       {"true", "t", "1"},
       "true",
       "without it a retried produce can duplicate or reorder messages"},
  };
  return kFixed;
}

}  // namespace

absl::Status CheckKafkaOption(const std::string& option) {
  const size_t eq = option.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError("kafka option '" + option + "' is not KEY=VALUE");
  }
  const std::string key = option.substr(0, eq), value = Lower(option.substr(eq + 1));
  for (const Fixed& f : FixedProperties()) {
    if (std::find(f.names.begin(), f.names.end(), key) == f.names.end()) continue;
    if (std::find(f.same.begin(), f.same.end(), value) != f.same.end()) break;
    return absl::InvalidArgumentError("kafka option " + option + " is refused: " + key +
                                      " must stay " + f.required + ": " + f.why);
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
