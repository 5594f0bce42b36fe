#include "agent/kafka/kafka_options.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "agent/kafka/kafka_secrets.h"

namespace kspool::agent {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct Fixed {
  std::vector<std::string> names;  // the property and its librdkafka aliases
  std::vector<std::string> same;   // values librdkafka reads as an allowed one; empty: none
  std::string required;            // what the message says it must be
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
      {{"delivery.report.only.error"},
       {"false", "f", "0"},
       "false",
       "an entry leaves the WAL only on its delivery report; without reports for delivered "
       "messages they would stay in the WAL forever"},
      {{"transactional.id"},
       {},
       "unset",
       "the agent produces outside transactions, which a transactional producer refuses"},
      {{"partitioner"},
       {"murmur2", "murmur2_random"},
       "murmur2 or murmur2_random",
       "the agent routes keyed messages by murmur2 itself (per-key order across leader "
       "changes); the client's partitioner places them only until the topic's partitions "
       "are known, and another one would split a key over two partitions"},
      {{"statistics.interval.ms"},
       {},
       "above 0",
       "the agent learns from the client's statistics whether any broker is up (/status, "
       "kspool_kafka_brokers_up, the shutdown grace)"},
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
    // Any number but 0 (librdkafka checks the rest).
    if (key == "statistics.interval.ms" && !value.empty() &&
        value.find_first_not_of("0") != std::string::npos) {
      break;
    }
    return absl::InvalidArgumentError("kafka option " + option + " is refused: " + key +
                                      " must stay " + f.required + ": " + f.why);
  }
  return absl::OkStatus();
}

constexpr off_t kMaxOptionFileBytes = 1 << 20;

absl::Status AddKafkaOptionFiles(const std::vector<std::string>& key_paths,
                                 std::vector<std::string>* options) {
  const size_t given = options->size();
  for (const std::string& kp : key_paths) {
    const size_t eq = kp.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kp.size()) {
      return absl::InvalidArgumentError("--kafka-option-file '" + kp + "' is not KEY=PATH");
    }
    const std::string key = kp.substr(0, eq), path = kp.substr(eq + 1);
    const std::string what = "--kafka-option-file " + kp + ": ";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::InvalidArgumentError(what + "cannot open the file: " + std::strerror(errno));
    }
    // A regular file of bounded size: a FIFO or /dev/zero would block or fill memory.
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxOptionFileBytes) {
      ::close(fd);
      return absl::InvalidArgumentError(what + "not a regular file of at most 1MiB");
    }
    std::string value;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0 &&
           static_cast<off_t>(value.size()) <= kMaxOptionFileBytes) {
      value.append(buf, static_cast<size_t>(n));
    }
    const int read_errno = errno;
    ::close(fd);
    if (n < 0) {
      return absl::InvalidArgumentError(what +
                                        "cannot read the file: " + std::strerror(read_errno));
    }
    if (!value.empty() && value.back() == '\n') value.pop_back();
    if (!value.empty() && value.back() == '\r') value.pop_back();
    if (value.empty()) return absl::InvalidArgumentError(what + "the file is empty");
    for (size_t i = 0; i < options->size(); ++i) {
      if (options->at(i).rfind(key + "=", 0) != 0) continue;
      return absl::InvalidArgumentError(what + key +
                                        (i < given
                                             ? " is also given with --kafka-option; give it once"
                                             : " is given by two files; give it once"));
    }
    // Only the fixed properties (acks, enable.idempotence, ...) can fail, and they are
    // no secrets: the message may show the value.
    absl::Status s = CheckKafkaOption(key + "=" + value);
    if (!s.ok()) return absl::InvalidArgumentError(what + std::string(s.message()));
    options->push_back(key + "=" + value);
  }
  return absl::OkStatus();
}

}  // namespace kspool::agent
